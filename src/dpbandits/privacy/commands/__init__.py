"""`dpbandits privacy <NAME>` plug-ins: each module defines NAME, add_arguments, main."""
