# Figures and tables: one job per experiment writes every output entry it declares. PNG figures
# and CSV tables are registered for `snakemake --report`, captioned per output kind
# (workflow/report/<kind>.rst, else workflow/report/output.rst). The paper/published/*.yaml files
# its outputs name (`published: "<family>:<entry>"`) and the paper-scale config (colours, the
# smoke-scale mark: dpbandits.scale) are inputs of the job.
from dpbandits.paper.published import published_files

PUBLISHED_DIR = Path(workflow.basedir, "paper", "published")
PAPER_CONFIG = str(Path(workflow.basedir, "config", "config.yaml"))


def report_output(name, kind, path):
    """An output file, wrapped for the Snakemake report when it is a figure or a table."""
    if not path.endswith((".png", ".csv")):
        return path
    caption = f"{kind}.rst"
    if not Path(workflow.basedir, "workflow", "report", caption).exists():
        caption = "output.rst"
    return report(
        path,
        caption=f"../report/{caption}",
        category=config["experiments"][name].get("paper", "other"),
        subcategory=name,
        labels={"experiment": name, "output": kind, "file": Path(path).name},
    )


for _name in config["experiments"]:

    rule:
        name:
            f"outputs_{_name}"
        priority: FIRST
        input:
            summary=f"{RESULTS}/{_name}/summary.csv",
            curves=f"{RESULTS}/{_name}/curves.h5",
            paper_config=PAPER_CONFIG,
            published=published_files(
                [spec["published"] for spec in config["experiments"][_name]["outputs"]
                 if spec.get("published")],
                PUBLISHED_DIR,
            ),
        output:
            [
                report_output(_name, spec["kind"], f)
                for spec, files in zip(
                    config["experiments"][_name]["outputs"], OUTPUT_FILES[_name], strict=True
                )
                for f in files
            ],
        params:
            experiment=_name,
        log:
            f"{RESULTS}/logs/outputs/{_name}.log",
        script:
            "../scripts/make_outputs.py"
