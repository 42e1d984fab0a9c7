# Two commands do all the set-up: `make lab` and `make test`.
PYTHON ?= python3
# This Makefile's folder (make -f from elsewhere, as tests/grading/test_autograde.py does, still finds its scripts).
HERE := $(dir $(abspath $(firstword $(MAKEFILE_LIST))))
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8888
LAB_ARGS ?=
# Jupyter refuses to run as root unless told; containers and fresh cloud machines often are root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: help install system-packages lab lint check test bench bench-table clean labs

help:
	@echo "make lab          install (first run only) and start the learner's JupyterLab on the course"
	@echo "make test         install (first run only) and run every test, notebooks included (lint first)"
	@echo "make check        the quick loop: lint and the unit tests (the unit tier), under a minute"
	@echo "make test-unit    the unit tier alone (make check without the lint)"
	@echo "make test-integration  the grader, servers and fresh processes (the integration tier)"
	@echo "make test-e2e     the chapters and labs executed, Chromium, the JupyterHub and Binder (the e2e tier)"
	@echo "make test-integration-e2e  both tiers in one run, as make test runs them (TEST_WORKERS=2: in two processes)"
	@echo "make lint         ruff, the import contracts, the type checker and the dead-code finder"
	@echo "make install      the system packages (bubblewrap; apt-get as root), then .venv with the course, test, hub and cluster dependencies"
	@echo "make system-packages  only the system packages the course needs (SYSTEM_SET=test: also what the tests need)"
	@echo "make labs         regenerate labs/ (what learners receive) from the nbgrader sources in solutions/"
	@echo "make notebooks    re-sync the chapters and lab sources with their text forms in text/"
	@echo "make bench        run the benchmarks, save benchmarks/results/ and regenerate benchmarks/RESULTS.md's table"
	@echo "make bench-table  regenerate that table from the saved results only"
	@echo "make hub          a demo class on JupyterHub at http://127.0.0.1:8000/ (deploy/hub/README.md)"
	@echo "make hub-proxy    install the hub's proxy (configurable-http-proxy, from npm) into deploy/hub/node_modules"
	@echo "make hub-load     the end-to-end hub class with 30 learners submitting at once (minutes)"
	@echo "make clean        remove every environment made here (.venv, .venv-hta, the hub's proxy and state) and caches"
	@echo "make help         this list"

# The system packages beyond pip (tools/system_packages.py, run first, with the machine's own Python): bubblewrap for
# grading's sandbox; `make test` also Chromium (the browser tests) and npm (the hub's proxy). Present: nothing happens.
# Missing: installed with apt-get as root or with passwordless sudo, said in one line; elsewhere one line says what
# is missing and how to install it, and make stops (SYSTEM_PACKAGES=skip goes on without them).
SYSTEM_SET ?= lab
test: SYSTEM_SET := test

system-packages:
	@$(PYTHON) $(HERE)tools/system_packages.py $(SYSTEM_SET)

$(BIN)/python: | system-packages
	$(PYTHON) -m venv $(VENV)

# constraints.txt pins torch to the exact release the course is tested with; see README "GPU".
$(STAMP): pyproject.toml constraints.txt | system-packages $(BIN)/python
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[course,test,hub,cluster]"
	$(BIN)/python binder/install_lab_settings.py
	@touch $@

install: system-packages $(STAMP)

# The course's JupyterLab settings (binder/overrides.json: no "get notified about Jupyter news?" prompt, no update
# check), merged into the environment's overrides.json by binder/install_lab_settings.py; Binder's postBuild runs the
# same. The server flags keep JupyterLab from fetching news or checking for updates at all.
LAB_NO_NEWS := --LabApp.news_url=None --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate

# The learner's JupyterLab (binder/jupyter_config/, put first on JUPYTER_CONFIG_PATH for this server alone; Binder's
# binder/start does the same): none of nbgrader's instructor tools (its menu, the formgrader, the course list, the
# Create Assignment panel, the Validate button; the assignment list stays), and no jupytext, so that saving a chapter
# writes the notebook alone and never its text form in text/ (`make notebooks` syncs the pairs, jupytext.toml).
LEARNER_CONFIG := $(HERE)binder/jupyter_config

lab: install
	@$(BIN)/python binder/install_lab_settings.py
	JUPYTER_CONFIG_PATH="$(LEARNER_CONFIG)$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
		$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/chapters $(LAB_NO_NEWS) \
		--ServerApp.port=$(PORT) $(ROOT_FLAG) $(LAB_ARGS)

# Lint and format check of the package, tests, benchmarks and deploy (settings in pyproject.toml, [tool.ruff]);
# notebooks are left out. `$(BIN)/ruff format .` applies the format. Then the package's structure: the import
# contracts (layers, no cycles: [tool.importlinter]), the type checker ([tool.mypy]) and the dead-code finder
# (tools/dead_code.py, which also reads the chapters' and labs' code in their text forms).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(BIN)/python tools/dead_code.py

# The suite in three tiers, each a make target; every test is in exactly one, read off its markers (declared in
# pyproject.toml, given by each test file's pytestmark; tests/labtools.py `tier_of` sorts them):
# - unit (`make check`, the quick loop while editing, with the lint): no notebook, browser, grader, hub or other
#   slow work (a server, a fresh environment or process that imports torch, a long computation);
# - integration (`make test-integration`): the grader (grading), servers and fresh processes (slow);
# - e2e (`make test-e2e`): the chapters and labs executed (notebook), Chromium (browser), the JupyterHub (hub), the
#   Binder environment (binder).
# `make test` runs the lint, the unit tier, then the integration and e2e tiers in one pytest run; TEST_WORKERS=2
# runs that in two processes (pytest-xdist, `--dist loadgroup`: a chapter's tests, the Binder environment's and each
# file's share a process, tests/conftest.py). `pytest -m notebook` (or
# browser, grading, slow, hub, binder) runs one kind. pytest caches the test modules it rewrites (writing bytecode,
# even where PYTHONDONTWRITEBYTECODE is set): collection takes about half as long.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
# One process by default: beside one busy program on a 2-core machine two were slower (438.7 s against 404.6 s for
# the same 63 grading and chapter tests; benchmarks/RESULTS.md, "The suite on a clean clone").
TEST_WORKERS ?= 0
XDIST := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

.PHONY: test-unit test-integration test-e2e test-integration-e2e
test-unit: install
	$(PYTEST) -q --tier unit tests

check: install lint test-unit

test-integration: install
	$(PYTEST) $(XDIST) --tier integration tests

# Each chapter executes once per kind of run (tests/chapter_runs.py): with the reference answers (no cell fails) and
# with wrong answers (exactly the graded checks fail, and then each answer cell as committed with its check).
test-e2e: install hub-proxy
	$(PYTEST) $(XDIST) --tier e2e tests

test-integration-e2e: install hub-proxy
	$(PYTEST) $(XDIST) --tier integration --tier e2e tests

test: install hub-proxy lint
	$(MAKE) --no-print-directory test-unit test-integration-e2e SYSTEM_SET=test

# Regenerate labs/ (what learners receive) from the nbgrader sources in solutions/, one lab per folder, with the
# settings in nbgrader_config.py. --no-db: releasing needs no gradebook, so none is written.
labs: install
	@for dir in labs/*/; do [ ! -d "$$dir" ] || [ -d "solutions/$$(basename "$$dir")" ] || rm -rf "$$dir"; done
	@for src in solutions/*/; do \
		[ -d "$$src" ] || continue; \
		lab=$$(basename "$$src"); \
		$(BIN)/nbgrader generate_assignment "$$lab" --force --no-db --log-level=WARN || exit 1; \
		echo "labs/$$lab/ regenerated from solutions/$$lab/"; \
	done

# Re-sync every notebook of chapters/ and solutions/ with its text form in text/ (MyST Markdown, paired in
# jupytext.toml): the side edited last wins, then every cell gets its stable id (text/sync.py). Run it after
# editing either side; tests/project/test_notebook_pairs.py fails while a pair is out of step.
.PHONY: notebooks
notebooks: install
	$(BIN)/python text/sync.py

# Comparisons against reference tools, each a ratio measured in the same run, or a bound (see benchmarks/RESULTS.md).
# benchmarks/collect.py runs them (the list and each command: `benchmarks/collect.py --list`), saves each JSON line in
# benchmarks/results/ and regenerates the table in benchmarks/RESULTS.md; `make bench-table` only regenerates it.
# HolisticTraceAnalysis (PyPI: traceinsight) lives in its own environment: a benchmark-only reference.
HTA_VENV ?= .venv-hta
BENCH_ARGS ?=

# HTA at the release measured, and ijson, whose wheels carry the C backend (yajl2_c) that HTA's fastest parser
# (ParserBackend.IJSON_BATCH_AND_COMPRESS) needs; trace_vs_hta runs HTA with that backend and with its default.
HTA_PACKAGES := traceinsight==0.6.1 ijson==3.6.0

$(HTA_VENV)/bin/python:
	$(PYTHON) -m venv $(HTA_VENV)

$(HTA_VENV)/.installed: Makefile | $(HTA_VENV)/bin/python
	$(HTA_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(HTA_PACKAGES)
	$(HTA_VENV)/bin/python -c "import ijson, sys; sys.exit(ijson.backend != 'yajl2_c' and 'no yajl2_c in ijson')"
	@touch $@

bench: install $(HTA_VENV)/.installed
	$(BIN)/python benchmarks/collect.py --python $(BIN)/python --hta-python $(HTA_VENV)/bin/python $(BENCH_ARGS)

bench-table:
	$(PYTHON) benchmarks/collect.py --render-only

# Every environment the Makefile made; instructors' nbgrader state (gradebook.db, submitted/, ...) is kept.
clean:
	rm -rf $(VENV) $(HTA_VENV) $(HUB_DIR)/node_modules $(HUB_DIR)/state .pytest_cache .hypothesis .ruff_cache .mypy_cache *.egg-info

# The course on a JupyterHub (deploy/hub/README.md). The hub's proxy, configurable-http-proxy, is an npm package:
# installed into deploy/hub/node_modules (ignored by git), never globally. Without npm the hub tests skip, loudly.
HUB_DIR := deploy/hub
CHP := $(HUB_DIR)/node_modules/.bin/configurable-http-proxy
HUB_PORT ?= 8000
HUB_LEARNERS ?= 3
HUB_STATE ?= $(HUB_DIR)/state

.PHONY: hub hub-proxy hub-load

$(CHP): $(HUB_DIR)/package.json
	npm install --prefix $(HUB_DIR) --no-package-lock --no-audit --no-fund --loglevel=error
	@touch $@

hub-proxy:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(CHP); \
	else echo "*** npm is missing: configurable-http-proxy cannot be installed and the JupyterHub tests (tests/hub) will be SKIPPED; install Node.js and npm (Debian: apt-get install -y nodejs npm)"; fi

# A demo class on http://127.0.0.1:$(HUB_PORT)/: the instructor and learner1..N, the lab released (Ctrl-C stops it).
hub: install hub-proxy
	$(BIN)/python $(HUB_DIR)/hubctl.py start --state $(HUB_STATE) --port $(HUB_PORT) --learners $(HUB_LEARNERS) \
		$(if $(HUB_PASSWORD),--password "$(HUB_PASSWORD)")

# The end-to-end hub class at scale (tests/hub/test_hub_load.py): 30 learners submitting at once, graded (minutes).
hub-load: install hub-proxy
	GPUCOST_HUB_LOAD=1 $(BIN)/python -m pytest -p no:cacheprovider -s tests/hub/test_hub_load.py
