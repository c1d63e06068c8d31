# The README's two commands: `make serve` and `make test`. Both create .venv and install pinned versions.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements/constraints.txt

.PHONY: serve services test test-fast lint pytest bench openapi examples install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(PIP) ./format ./client ./service

install-dev: install
	$(PIP) -r requirements/dev.txt
	@# The suite tests the work tree, not a copy: the three distributions as editable installs.
	$(PIP) --no-deps -e ./format -e ./client -e ./service
	@# The dashboard tests drive Debian's Chromium through Playwright (no browser download).
	@test -x /usr/bin/chromium || { \
		echo "installing Debian's chromium for the dashboard tests"; \
		apt-get install -y -q chromium || { apt-get update -q && apt-get install -y -q chromium; }; }

## Start the coordinator on the embedded default: SQLite ./coordinator.db and ./warehouse, http://127.0.0.1:8080
serve: install
	$(BIN)/coordinator serve

## PostgreSQL from Debian's packages on 127.0.0.1:5432 (user postgres, no password), installed, created and
## started when it is not already up. No machine here starts it by itself; `make test` runs this first.
services:
	bash .ci/services.sh

## The whole suite: lint, type check, deployment files, then every test on SQLite and PostgreSQL.
test: services install-dev lint pytest

## The fast lane while editing (about three minutes on 2 cores): SQLite and local disk only, no Spark, no
## Chromium, nothing marked slow. PostgreSQL would add about a minute; `make test` runs every lane on both databases.
test-fast: install-dev
	$(BIN)/pytest -m "not slow and not spark and not browser and not postgres and not s3"

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/hadolint Dockerfile
	$(BIN)/docker-compose -f docker-compose.yml config --quiet

pytest: services
	$(BIN)/pytest

bench: services install-dev
	$(BIN)/python bench/run.py

## The README's quick start, then the Spark example jobs, against a coordinator that `make serve` started
## (or the one at URL). Each job has tables of its own, so the target passes again and again.
## tests/spark/test_examples.py runs these very lines.
URL ?= http://127.0.0.1:8080
examples: install
	$(PIP) './client[spark]' pypaimon
	$(BIN)/python examples/quickstart.py $(URL)
	$(BIN)/python examples/batch_job.py $(URL)
	$(BIN)/python examples/compaction_job.py $(URL)
	$(BIN)/python examples/changes_job.py $(URL)
	$(BIN)/python examples/streaming_job.py $(URL)
	$(BIN)/python examples/transaction_job.py $(URL)

openapi: install
	$(BIN)/coordinator openapi --output openapi/openapi.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
