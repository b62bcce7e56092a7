# Set-up-free entry points: each target bootstraps its own virtual environment.
PYTHON ?= python3
VENV ?= .venv
CORES ?= 2
SCALE ?= paper
CONFIG_paper := config/config.yaml
CONFIG_smoke := config/smoke.yaml
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: reproduce realdata smoke test lint bench clean

$(STAMP): pyproject.toml setup.py constraints.txt src/dpbandits/privacy/_exact.c \
    src/dpbandits/privacy/exact_sampler.h src/dpbandits/privacy/exact_calibration.h
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c constraints.txt --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[workflow,test]"
	touch $@

## reproduce: every synthetic experiment of the three papers at paper scale (SCALE=smoke: tiny)
reproduce: $(STAMP)
	@test -n "$(CONFIG_$(SCALE))" || { echo "SCALE=$(SCALE) is not allowed; allowed: paper, smoke" >&2; exit 2; }
	$(BIN)/snakemake --cores $(CORES) --configfile $(CONFIG_$(SCALE))

## realdata: MovieLens-25M and Jester experiments (downloads or pre-placed archives)
realdata: $(STAMP)
	$(BIN)/snakemake --cores $(CORES) realdata

## smoke: every experiment, tiny (same as `make reproduce SCALE=smoke`)
smoke:
	$(MAKE) reproduce SCALE=smoke

## test: lint and the whole test suite (real snakemake, HDF5, dp-accounting; SLURM where present)
test: $(STAMP)
	$(BIN)/ruff check .
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .

## bench: speed and scaling measurements (writes benchmarks/results/)
bench: $(STAMP)
	for script in benchmarks/bench_*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf results/*/ paper/figures/* paper/tables/* paper/generated paper/build paper/numbers.tex paper/reproduction.* paper/main.pdf .snakemake
