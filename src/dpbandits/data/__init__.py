"""Real rating data: pinned archives, download, verification, safe extraction, parsing, SVD.

Layout under the data root (default `results/data`, see `layout.py`): `archives/<file>`,
`archives/<file>.verified.json`, `raw/<stem>/`, `<dataset>/ratings.h5`,
`<dataset>/svd_k<k>_<fit>.h5` (fit: whole, prefix<p>, split<p>; `fitting.py`).
"""

from dpbandits.errors import DPBanditsError

DEFAULT_ROOT = "results/data"


class DataError(DPBanditsError):
    """A data file is missing, corrupt, unsafe or unparsable; the message says what to do."""
