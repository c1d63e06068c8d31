# The README's two commands: `make serve` and `make test`. Both create .venv and install pinned versions.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements/constraints.txt

.PHONY: serve services test lint test-fast test-browser test-postgres test-s3 test-spark test-flink flink bench openapi \
	examples install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(PIP) ./format ./client ./service

install-dev: install
	$(PIP) -r requirements/dev.txt './service[nats]'
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

## The suite's lanes: marker expressions over the markers tests/conftest.py sets, each lane a make target of
## its own. Every test is in exactly one lane (tests/test_lanes.py checks it against these lines): a test
## needing Spark is in the Spark lane, else one driving Chromium in the browser lane, else one on S3 in the
## S3 lane, else one on PostgreSQL or marked slow in the PostgreSQL lane; the rest is the fast lane.
LANE_FAST := not slow and not postgres and not s3 and not spark and not browser and not flink
LANE_BROWSER := browser and not spark and not flink
LANE_POSTGRES := (postgres or slow) and not s3 and not spark and not browser and not flink
LANE_S3 := s3 and not spark and not browser and not flink
LANE_SPARK := spark and not flink
LANE_FLINK := flink

## The whole suite, the cheap lanes first: lint (type check and deployment files too), then every lane.
test: services install-dev lint test-fast test-browser test-postgres test-s3 test-spark test-flink

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/hadolint Dockerfile
	$(BIN)/docker-compose -f docker-compose.yml config --quiet

## The fast lane while editing (about four minutes on 2 cores): SQLite and local disk only, no Spark, no
## Chromium, nothing marked slow.
test-fast: install-dev
	$(BIN)/pytest -m "$(LANE_FAST)"

## The dashboard in headless Chromium (Debian's, installed by install-dev), on SQLite and PostgreSQL.
test-browser: services install-dev
	$(BIN)/pytest -m "$(LANE_BROWSER)"

## Every test on PostgreSQL (local disk), and the slow ones (concurrency, replicas, many commits, fuzzing).
test-postgres: services install-dev
	$(BIN)/pytest -m "$(LANE_POSTGRES)"

## The storage-touching tests on a real S3 store (SeaweedFS on loopback), on SQLite and PostgreSQL.
test-s3: services install-dev
	$(BIN)/pytest -m "$(LANE_S3)"

## PySpark: the data source, the writers and the example jobs (about seven minutes).
test-spark: services install-dev
	$(BIN)/pytest -m "$(LANE_SPARK)"

## Flink: PyFlink in a venv of its own (its pins conflict with the project's: requirements/flink.txt) and
## the pinned jars from Maven Central (.ci/jars.sh, checked against their published SHA-1) in .cache/jars.
FLINK_VENV ?= .venv-flink
$(FLINK_VENV)/bin/python:
	$(PYTHON) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/pip install --quiet --disable-pip-version-check -c requirements/flink.txt apache-flink

flink: $(FLINK_VENV)/bin/python
	bash .ci/jars.sh

## Paimon's Flink connector through the coordinator: Flink SQL jobs, a crash and its restart (tests/flink).
test-flink: services install-dev flink
	$(BIN)/pytest -m "$(LANE_FLINK)"

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
	rm -rf $(VENV) $(FLINK_VENV) .pytest_cache .mypy_cache .ruff_cache
