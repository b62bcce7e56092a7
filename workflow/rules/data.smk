# Real data: download → verify → extract → parse → svd under config["data"]["root"]
# (default results/data). Archives placed by hand at <root>/archives/<file> are used as they are
# (after verification). Replay instances list the files they read under `requires:`.
# Features: <root>/<dataset>/svd_k<k>_<fit>.h5, fit = online | online<p> | whole | prefix<p> |
# split<p> (docs/realdata.md, "Feature modes"); data/svd settings are the rule's params, so that
# changing them rebuilds the features. ratings.h5 records the archives' stamps (provenance).
import re
import sys

from dpbandits.errors import DPBanditsError
from dpbandits.data.layout import archive_path, features_path, ratings_path, raw_dir, stamp_path
from dpbandits.data.fitting import TOKEN_PATTERN as _FIT_RE
from dpbandits.data.registry import archives, check_data_config, datasets, stems

try:
    _DATA_CFG = check_data_config(config.get("data"))
except DPBanditsError as exc:
    sys.stderr.write(f"dpbandits: error: {exc}\n")
    sys.exit(2)
DATA_ROOT = _DATA_CFG["root"]
_ARCHIVE_BY_STEM = {spec.stem: name for name, spec in archives().items()}


def _alternatives(names):
    return "|".join(re.escape(n) for n in names)


_ARCHIVE_RE = _alternatives(archives())
_STEM_RE = _alternatives(_ARCHIVE_BY_STEM)
_DATASET_RE = _alternatives(datasets())


rule data_download:
    priority: FIRST
    output:
        str(archive_path(DATA_ROOT, "{archive}")),
    wildcard_constraints:
        archive=_ARCHIVE_RE,
    log:
        f"{DATA_ROOT}/logs/download_{{archive}}.log",
    resources:
        runtime=lambda wildcards, attempt: 120 * attempt,
    script:
        "../scripts/data_download.py"


rule data_verify:
    priority: FIRST
    input:
        archive=str(archive_path(DATA_ROOT, "{archive}")),
    output:
        str(stamp_path(DATA_ROOT, "{archive}")),
    wildcard_constraints:
        archive=_ARCHIVE_RE,
    log:
        f"{DATA_ROOT}/logs/verify_{{archive}}.log",
    script:
        "../scripts/data_verify.py"


rule data_extract:
    priority: FIRST
    input:
        archive=lambda wc: str(archive_path(DATA_ROOT, _ARCHIVE_BY_STEM[wc.stem])),
        stamp=lambda wc: str(stamp_path(DATA_ROOT, _ARCHIVE_BY_STEM[wc.stem])),
    output:
        directory(str(raw_dir(DATA_ROOT, "{stem}"))),
    wildcard_constraints:
        stem=_STEM_RE,
    log:
        f"{DATA_ROOT}/logs/extract_{{stem}}.log",
    benchmark:
        f"{DATA_ROOT}/benchmarks/extract_{{stem}}.tsv"
    script:
        "../scripts/data_extract.py"


rule data_parse:
    priority: FIRST
    input:
        raw=lambda wc: [str(raw_dir(DATA_ROOT, s)) for s in stems(wc.dataset).values()],
        stamps=lambda wc: [str(stamp_path(DATA_ROOT, f)) for f in stems(wc.dataset)],
    output:
        str(ratings_path(DATA_ROOT, "{dataset}")),
    wildcard_constraints:
        dataset=_DATASET_RE,
    params:
        raw_dirs=lambda wc: {f: str(raw_dir(DATA_ROOT, s)) for f, s in stems(wc.dataset).items()},
    log:
        f"{DATA_ROOT}/logs/parse_{{dataset}}.log",
    benchmark:
        f"{DATA_ROOT}/benchmarks/parse_{{dataset}}.tsv"
    resources:
        runtime=lambda wildcards, attempt: 60 * attempt,
        mem_mb=lambda wildcards, attempt: 8000 * attempt,
    script:
        "../scripts/data_parse.py"


rule data_svd:
    priority: FIRST
    input:
        str(ratings_path(DATA_ROOT, "{dataset}")),
    output:
        str(features_path(DATA_ROOT, "{dataset}", "{k}", "{fit}")),
    wildcard_constraints:
        dataset=_DATASET_RE,
        k=r"[1-9][0-9]*",
        fit=_FIT_RE,
    params:
        svd=_DATA_CFG["svd"],
    log:
        f"{DATA_ROOT}/logs/svd_{{dataset}}_k{{k}}_{{fit}}.log",
    benchmark:
        f"{DATA_ROOT}/benchmarks/svd_{{dataset}}_k{{k}}_{{fit}}.tsv"
    resources:
        runtime=lambda wildcards, attempt: 60 * attempt,
        mem_mb=lambda wildcards, attempt: 8000 * attempt,
    script:
        "../scripts/data_svd.py"
