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

## dev: the main job. For now: validate jobs/, say what changes, then compile it.
## (`jobplane dev`, the whole platform on one machine, replaces this once it exists.)
dev: $(STAMP)
	$(BIN)/jobplane validate
	$(BIN)/jobplane plan
	$(BIN)/jobplane compile

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
