# Every target builds .venv on first use, so a fresh clone needs only `make test` or `make dev`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test compile plan tfcheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

## dev: the main job. For now: validate and compile jobs/, then show the plan of what changes.
dev: $(STAMP)
	$(BIN)/jobplane validate
	$(BIN)/jobplane compile
	$(BIN)/jobplane plan

## test: the whole test suite, in parallel.
test: $(STAMP)
	$(BIN)/pytest -n auto

compile: $(STAMP)
	$(BIN)/jobplane compile

## tfcheck: offline terraform validate + ASL lint + checkov of the base module with the compiled jobs.
tfcheck: compile
	../shared/tools/tfcheck/setup.sh
	../shared/tools/tfcheck/validate.py --tree terraform terraform/jobs

bench: $(STAMP)
	$(BIN)/python bench/compile.py

clean:
	rm -rf $(VENV) build terraform/jobs .pytest_cache
