# rmqsim: `make help` lists the targets. `make demo` and `make test` set up .venv themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Airflow in its own environment: its pins (pandas 3 among them) clash with rmqsim's.
AIRFLOW_VENV  := .venv-airflow
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help demo test envs lint bench package airflow java clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 12

java: ## check that Java 17+ is on the machine
	@scripts/check_java.sh

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "rmqsim needs Python 3.10 or newer")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

$(AIRFLOW_STAMP): dags/requirements.txt
	@test -x $(AIRFLOW_VENV)/bin/python || $(PYTHON) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet -r dags/requirements.txt
	@touch $(AIRFLOW_STAMP)

airflow: $(AIRFLOW_STAMP) ## build .venv-airflow (Airflow and its Spark provider) for the DAG's tests

demo: java $(STAMP) ## run every strategy on the bundled sample snapshot, write ./out
	$(VENV)/bin/rmqsim demo $(if $(OUT),--out $(OUT))

# Both environments at once, one per core. Their modules stay compiled at install: where
# PYTHONDONTWRITEBYTECODE is set (as on this machine) Python would otherwise compile every module
# a test's process imports again in each process (docs/development.md).
envs:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(AIRFLOW_STAMP)

test: java envs ## run the test suite (pytest, local[2]; spark-submit, Airflow, notebook)
	RMQSIM_AIRFLOW_PYTHON=$(CURDIR)/$(AIRFLOW_VENV)/bin/python RMQSIM_REQUIRE_AIRFLOW=1 $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP) ## ruff
	$(VENV)/bin/ruff check rmqsim tests jobs bench dags scripts

bench: java $(STAMP) ## benchmark simulate against the Parquet I/O floor (ROWS=1000000)
	$(PY) bench/bench_simulate.py $(if $(ROWS),--rows $(ROWS))

package: $(STAMP) ## build dist/ for spark-submit: wheel, --py-files zip, simulate.py, Spark profiles
	$(PY) scripts/package.py --out dist

clean: ## remove outputs and caches (keeps .venv)
	rm -rf out dist build bench/out bench/data .pytest_cache spark-warehouse
