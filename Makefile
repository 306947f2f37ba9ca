# Every target builds .venv on first use, so a fresh clone needs only `make test` or `make dev`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test soak compile package plan tfcheck tfcheck-checks tfcheck-ci-roles tfcheck-workflow-plan tfcheck-plan-slack screenshots bench clean lock

# The environment is the lock (requirements/dev.txt: every package at one version, with its
# hashes), then jobplane itself; `make lock` refreshes the locks after pyproject.toml changes.
# Says what it does as it goes. One pip pass over the hashed lock, wheels only (every locked
# package has one: --only-binary :all:, so nothing is built from source), no .pyc compile step at
# install (Python compiles each module on first import), and no pip self-upgrade: the first
# build (this target, warm package cache) took 81 s on a loaded 2-core machine, 3 min 10 s before
# (issue 65 item 9).
$(STAMP): pyproject.toml requirements/dev.txt
	@echo "== building $(VENV) (first use, or the lock changed): Python packages from requirements/dev.txt"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing $$(grep -c '^[a-z0-9]' requirements/dev.txt) locked packages (each is listed as it is collected)"
	bash -o pipefail -c "$(BIN)/pip install --progress-bar off --no-compile --only-binary :all: \
	  --require-hashes -r requirements/dev.txt | awk '/^(Collecting|Successfully installed)/ { print substr(\$$0, 1, 100); fflush() }'"
	$(BIN)/pip install -q --no-deps --no-compile -e .
	touch $(STAMP)
	@echo "== $(VENV) ready"

## lock: re-resolve requirements/dev.txt (tests, make dev) and requirements/runtime.txt (the
## pipeline, the portal image, the Lambda package) from pyproject.toml, with hashes, by uv; and
## requirements/lambda.txt (the runtime interface client a Lambda step's image adds).
## The runtime lock takes each version from the dev lock, so what ships is what the tests ran.
## Versions already locked are kept; `make lock LOCK_UPGRADE=--upgrade` moves every one to its newest.
UV_VERSION := 0.13.8
LOCK_ARGS := --generate-hashes --universal --python-version 3.11 --custom-compile-command "make lock" -q
lock:
	test -x .venv-lock/bin/uv || { $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install -q uv==$(UV_VERSION); }
	.venv-lock/bin/uv pip compile pyproject.toml --extra test $(LOCK_ARGS) $(LOCK_UPGRADE) -o requirements/dev.txt
	.venv-lock/bin/uv pip compile pyproject.toml $(LOCK_ARGS) --constraint requirements/dev.txt -o requirements/runtime.txt
	.venv-lock/bin/uv pip compile requirements/lambda.in $(LOCK_ARGS) $(LOCK_UPGRADE) -o requirements/lambda.txt

## dev: the main job: the whole platform on this machine (`jobplane dev`) until Ctrl-C.
## DEV_ARGS passes options, e.g. make dev DEV_ARGS=--reset
dev: $(STAMP)
	$(BIN)/jobplane dev $(DEV_ARGS)

## test: the programs the tests run besides Python (installed when it may, else the command
## to run: scripts/test_prereqs.sh), then the whole test suite with the type check (mypy, strict
## on the whole package: [tool.mypy]) run beside it at a lower priority (scripts/beside.sh: its
## ~21 CPU s on one core were a phase before the suite; its output is printed whole when it ends,
## and make test fails when either fails). The suite runs in parallel (--dist worksteal: each worker starts on
## its own contiguous share, the long modules first (tests/suite_timing.py), so a module's shared
## local AWS is mostly started once, and a worker that ends first takes tests from another's
## queue instead of waiting). Three workers on two cores: the suite waits on its subprocesses,
## local AWS and browser about half the time (978 CPU s in a 975 s two-worker run; three: 565 s
## for 1,473 tests, measured 2026-12-06 on the quiet 2-core machine). The portal's browser tests are skipped
## only when asked: make test JOBPLANE_SKIP_BROWSER_TESTS=1.
export JOBPLANE_SKIP_BROWSER_TESTS
# Python writes its bytecode and reads it back: an environment that sets PYTHONDONTWRITEBYTECODE
# (this machine kind's does) had every interpreter the tests and `jobplane dev` start compile
# boto3, moto and FastAPI from source again (3.7 s against 1.2 s for their import, measured
# with an empty PYTHONPYCACHEPREFIX). __pycache__ is git-ignored and left out of every package.
unexport PYTHONDONTWRITEBYTECODE
test: $(STAMP)
	scripts/test_prereqs.sh
	scripts/beside.sh '$(BIN)/mypy' $(BIN)/pytest -n 3 --dist worksteal

## soak: the whole test suite N times in a row (default 5), every failure by test id.
N ?= 5
soak: $(STAMP)
	$(BIN)/python scripts/soak.py $(N)

compile: $(STAMP)
	$(BIN)/jobplane compile

## package: the Lambda package the base module deploys (build/jobplane-lambda.zip), reproducible.
package: $(STAMP)
	$(BIN)/python scripts/build_lambda.py

## tfcheck: offline terraform validate + ASL lint + checkov for every compiled root (the base root
## with the base module it uses, each team's root) and for the base module alone; then a real
## `terraform plan` of each compiled root against tfcheck's stand-in provider (every expression,
## function and module input evaluated; the base root reads build/jobplane-lambda.zip), and of the
## base root with only the pipeline's own environment (scripts/check_workflow_plan.py). Fails on
## any checkov finding not fixed or skipped with a reason (inline #checkov:skip in terraform/platform).
TFCHECK := ../shared/tools/tfcheck
JOBS_OUT := terraform/jobs
MODULE_VARS := --var 'runner_image=123456789012.dkr.ecr.us-east-1.amazonaws.com/app:1' \
	--var 'subnet_ids=["subnet-0123456789abcdef0"]' --var 'security_group_ids=["sg-0123456789abcdef0"]'
PLAN_VARS := --var region=us-east-1 $(MODULE_VARS)
tfcheck: compile package
	$(TFCHECK)/setup.sh
	@# the roots' copies of a committed provider lock (terraform/providers.lock.hcl) pin the real
	@# provider's checksums, which tfcheck's stand-in cannot match: validate.py would fail its init
	find $(JOBS_OUT) -name .terraform.lock.hcl -delete
	@# every check below is independent (validate.py and plan.py each work in a scratch copy of the
	@# tree), so they run in parallel (TFCHECK_JOBS at once, one per core by default), each one's
	@# output printed whole when it ends (--output-sync), -k: every check runs and every failure is
	@# shown, and tfcheck fails when any check does. The roots are listed after `compile` wrote them.
	@$(MAKE) --no-print-directory -k -j $(TFCHECK_JOBS) --output-sync=target tfcheck-checks
TFCHECK_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TF_ROOTS = $(JOBS_OUT)/base $(wildcard $(JOBS_OUT)/teams/*) terraform/platform
# the base root is planned three ways: as it is, with VPC endpoints, with the portal's example settings
BASE_PLANS := plain endpoints portal
BASE_PLAN_plain :=
BASE_PLAN_endpoints := --var 'vpc_endpoints={vpc_id="vpc-1",route_table_ids=["rtb-1"]}'
BASE_PLAN_portal := --var-file $(CURDIR)/deploy/portal.example.tfvars.json
tfcheck-checks: $(addprefix tfcheck-validate/,$(TF_ROOTS)) $(addprefix tfcheck-plan-base/,$(BASE_PLANS)) \
	$(addprefix tfcheck-plan/,$(wildcard $(JOBS_OUT)/teams/*)) tfcheck-ci-roles tfcheck-workflow-plan tfcheck-plan-slack
	@echo "== tfcheck: every check passed"
# validate + ASL lint + checkov of one root (the tree it uses beside it); an ASL refusal passes
# only when scripts/asl_lint_gaps.py finds it is a field AWS documents that the linters predate
tfcheck-validate/%:
	@echo "== tfcheck $*"; \
	  out=$$($(TFCHECK)/validate.py --tree terraform $*); rc=$$?; \
	  echo "$$out"; \
	  [ $$rc -eq 0 ] || echo "$$out" | $(BIN)/python scripts/asl_lint_gaps.py || exit 1; \
	  echo "$$out" | tail -n 1 | grep -q "checkov_failed=0 checkov_parse_errors=0" || \
	    { echo "tfcheck: fix or skip (with a reason) every checkov finding in $*"; exit 1; }
tfcheck-plan-base/%:
	@echo "== plan $(JOBS_OUT)/base ($*: BASE_PLAN_$*)"; \
	  out=$$($(TFCHECK)/plan.py --tree terraform $(PLAN_VARS) $(BASE_PLAN_$*) $(JOBS_OUT)/base) || { echo "$$out"; exit 1; }; \
	  echo "$$out" | tail -n 1
tfcheck-plan/%:
	@echo "== plan $*"; \
	  out=$$($(TFCHECK)/plan.py --tree terraform --var region=us-east-1 $*) || { echo "$$out"; exit 1; }; \
	  echo "$$out" | tail -n 1
# the base module with Slack's buttons on (slack_actions.tf: its resources exist only then, so
# the plans above never evaluate them): the module planned alone, with its required inputs and
# deploy/slack.example.tfvars.json (the compiled base root's wiring of the same settings from
# jobplane.toml is tests/test_slack_buttons_off.py's)
tfcheck-plan-slack:
	@echo "== plan terraform/platform with Slack's buttons on (deploy/slack.example.tfvars.json)"; \
	  out=$$($(TFCHECK)/plan.py --tree terraform $(MODULE_VARS) \
	    --var lambda_package=$(CURDIR)/build/jobplane-lambda.zip \
	    --var-file $(CURDIR)/deploy/slack.example.tfvars.json terraform/platform) || { echo "$$out"; exit 1; }; \
	  echo "$$out" | grep -q "create: aws_lambda_function_url.slack_ingress" || { echo "$$out"; echo "tfcheck: the Slack resources were not planned"; exit 1; }; \
	  echo "$$out" | tail -n 1
tfcheck-ci-roles:
	@echo "== tfcheck deploy/ci-roles (the pipeline's plan and apply roles)"
	@out=$$($(TFCHECK)/validate.py --tree deploy deploy/ci-roles) || { echo "$$out"; exit 1; }; echo "$$out" | tail -n 1; \
	  echo "$$out" | tail -n 1 | grep -q "checkov_failed=0 checkov_parse_errors=0" || { echo "$$out"; exit 1; }
	@out=$$($(TFCHECK)/plan.py --tree deploy --var region=us-east-1 --var github_repository=acme/jobs \
	  --var state_bucket=acme-jobplane-state --var 'apply_policy_arns=["arn:aws:iam::aws:policy/PowerUserAccess"]' \
	  deploy/ci-roles) || { echo "$$out"; exit 1; }; echo "$$out" | tail -n 1
tfcheck-workflow-plan:
	@echo "== plan the base root as the pipeline does (its TF_VAR_*, [deploy] from jobplane.toml)"
	TFCHECK=$(TFCHECK) $(BIN)/python scripts/check_workflow_plan.py

## screenshots: the portal pages of docs/portal.md and docs/operate.md, from real runs (chromium).
screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py

## bench: every benchmark (the last plans Terraform offline: run `make tfcheck` once before).
bench: $(STAMP)
	$(BIN)/python bench/compile.py
	$(BIN)/python bench/runner_start.py
	$(BIN)/python bench/cli_start.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/dev_e2e.py
	$(BIN)/python bench/dev_scale.py
	$(BIN)/python bench/portal.py
	$(BIN)/python bench/import.py
	$(BIN)/python bench/missed_fires.py
	$(BIN)/python bench/calendar_ledger.py
	$(BIN)/python bench/quotas.py
	$(BIN)/python bench/pools.py
	$(BIN)/python bench/map_month_end.py
	$(BIN)/python bench/expectations.py
	$(BIN)/python bench/map_items_memory.py
	$(BIN)/python bench/storm.py --compare
	$(BIN)/python bench/terraform_roots.py
	$(BIN)/python bench/dev_scale.py --jobs 5000
	$(BIN)/python bench/portal.py --jobs 5000 --executions 100000
	$(BIN)/python bench/missed_fires.py --jobs 5000 --hours 0.5
	$(BIN)/python bench/terraform_roots.py --jobs 5000 --split skewed --roots 3 --no-plan
	$(BIN)/python bench/validate.py --jobs 5000

clean:
	rm -rf $(VENV) build terraform/jobs .pytest_cache .jobplane
