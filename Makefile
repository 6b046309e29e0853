# refit's entry points. `make check` is the quick tier (no root, no testbed); `make test` is the
# one CI runs (docs/docsite/rst/testing.rst).
SHELL := /bin/bash
CACHE ?= /var/cache/refit-testbed
# The bed the collection is installed into: the one REFIT_TESTBED_RUN names (a lane, tests/testbed/lane.sh), or the first.
RUN ?= $(or $(REFIT_TESTBED_RUN),/var/tmp/refit-testbed)
VENV ?= $(CACHE)/venv
MODULES := container_unit stop_services run_migrations flow_state data_step
# The oldest glibc the modules run on (EL8); tools/zigbuild.sh builds for it, `make modules` checks it.
GLIBC_CEILING := 2.28
ZIG_OUT := target/x86_64-unknown-linux-gnu/release
GALAXY := $(if $(wildcard $(VENV)/bin/ansible-galaxy),$(VENV)/bin/ansible-galaxy,ansible-galaxy)

.PHONY: conformance bench check demo test collection collection-install docs changelog version notices modules sidecars glibc-check refitctl refitctl-docs testbed-up testbed-down integration

## demo: the README's first command: a test host, deploy, z-stream update, upgrade, status, teardown
demo:
	examples/demo/run.sh

## bench: refit against the foremanctl way, the naive flow and podman auto-update; writes bench/RESULTS.md
bench:
	bench/run.sh

## check: format, clippy, cargo test, Python unit tests and ansible-lint; no root, no testbed
check:
	tools/check.sh

## test: format, lint, unit tests, then the integration suite on a fresh testbed
test:
	tests/run.sh

## version: VERSION, the one version source, written into galaxy.yml and Cargo.toml
version:
	tools/version.sh

## notices: the licences of what the module binaries link statically, shipped in the collection
notices:
	tools/third_party.py THIRD-PARTY-NOTICES.txt

## modules: release binaries of the modules for glibc 2.28 and newer (tools/zigbuild.sh), into plugins/modules/,
## and the options of their sidecar docs (plugins/modules/NAME.yml) from each one's `--doc`
modules: version
	tools/zigbuild.sh $(GLIBC_CEILING) -p refit-modules
	for m in $(MODULES); do install -m 0755 $(ZIG_OUT)/$$m plugins/modules/$$m; done
	tools/sidecar_options.py plugins/modules $(MODULES)
	$(MAKE) --no-print-directory glibc-check

## conformance: podman's quadlet e2e units through refit and the test hosts' quadlet (needs the testbed's rootfs cache)
conformance:
	tests/conformance/run.sh

## sidecars: only the options of the sidecar docs, from a debug build of the modules (quicker than `modules`)
sidecars:
	cargo build -q -p refit-modules
	tools/sidecar_options.py $${CARGO_TARGET_DIR:-target}/debug $(MODULES)

## glibc-check: fails when a binary (default: the modules) needs a glibc above GLIBC_CEILING
GLIBC_CHECKED ?= $(addprefix plugins/modules/,$(MODULES))
glibc-check:
	tools/glibc-ceiling.sh $(GLIBC_CEILING) $(GLIBC_CHECKED)

## refitctl: the release binary, built as the modules are (sharing their build), into target/release/refitctl
refitctl:
	tools/zigbuild.sh $(GLIBC_CEILING) -p refitctl
	install -D -m 0755 $(ZIG_OUT)/refitctl target/release/refitctl

## refitctl-docs: refitctl's shell completions and man pages, from its clap definition, into build/refitctl/
refitctl-docs:
	cargo run -q -p refitctl --example refitctl-docs -- build/refitctl

## collection: the modules, then `ansible-galaxy collection build` and install into the testbed
collection: modules notices
	mkdir -p build
	$(GALAXY) collection build --force --output-path build .
	$(MAKE) --no-print-directory collection-install

## collection-install: the built collection (build/), installed into the bed RUN names, unbuilt again
collection-install:
	$(GALAXY) collection install --force -p $(RUN)/collections build/refit-containers-$$(sed -n 's/^version: //p' galaxy.yml).tar.gz

## docs: the HTML docsite of the modules, roles and callback (antsibull-docs), build/docs/html; any warning fails it
docs: modules
	tools/docs.sh build/docs

## changelog: CHANGELOG.md from changelogs/; releases VERSION from the fragments when it is new
changelog: modules
	tools/changelog.sh

testbed-up:
	tests/testbed/testbed.sh up th1

testbed-down:
	tests/testbed/testbed.sh down

## integration: the scenario playbooks against a testbed that is already up
integration: collection refitctl
	tests/integration/run.sh
