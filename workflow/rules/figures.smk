# Figures and tables: one job per experiment writes every output entry it declares.

for _name in config["experiments"]:

    rule:
        name:
            f"outputs_{_name}"
        input:
            summary=f"{RESULTS}/{_name}/summary.csv",
            curves=f"{RESULTS}/{_name}/curves.h5",
        output:
            [f for files in OUTPUT_FILES[_name] for f in files],
        params:
            experiment=_name,
        log:
            f"{RESULTS}/logs/outputs/{_name}.log",
        script:
            "../scripts/make_outputs.py"
