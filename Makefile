# refit's entry points. `make test` is the one CI runs (see README, "Testing").
SHELL := /bin/bash
CACHE ?= /var/cache/refit-testbed
RUN ?= /var/tmp/refit-testbed
VENV ?= $(CACHE)/venv
MODULES := container_unit stop_services run_migrations flow_state
GALAXY := $(if $(wildcard $(VENV)/bin/ansible-galaxy),$(VENV)/bin/ansible-galaxy,ansible-galaxy)

.PHONY: bench demo test collection modules refitctl testbed-up testbed-down integration

## demo: the README's first command: a test host, deploy, z-stream update, upgrade, status, teardown
demo:
	examples/demo/run.sh

## bench: refit against the foremanctl way, the naive flow and podman auto-update; writes bench/RESULTS.md
bench:
	bench/run.sh

## test: format, lint, unit tests, then the integration suite on a fresh testbed
test:
	tests/run.sh

## modules: release binaries of the modules, into plugins/modules/
modules:
	cargo build --release --locked -p refit-modules
	for m in $(MODULES); do install -m 0755 target/release/$$m plugins/modules/$$m; done

## refitctl: the release binary, target/release/refitctl
refitctl:
	cargo build --release --locked -p refitctl

## collection: the modules, then `ansible-galaxy collection build` and install into the testbed
collection: modules
	mkdir -p build
	$(GALAXY) collection build --force --output-path build .
	$(GALAXY) collection install --force -p $(RUN)/collections build/refit-containers-$$(sed -n 's/^version: //p' galaxy.yml).tar.gz

testbed-up:
	tests/testbed/testbed.sh up th1

testbed-down:
	tests/testbed/testbed.sh down

## integration: the scenario playbooks against a testbed that is already up
integration: collection refitctl
	tests/integration/run.sh
