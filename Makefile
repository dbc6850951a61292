# tcpprofile build: native parts go to build/. Each part owns a fragment that adds to BUILD_TARGETS.
BUILD := build
PY := .venv/bin/python
BUILD_TARGETS :=

include native/build.mk
include bpf/build.mk

.PHONY: build test demo bench clean
build: $(BUILD_TARGETS)

# -rs: every skipped test with its reason. The unit tests on every core (pytest-xdist); then the privileged
# tests one at a time and alone, since they time the emulated link and the host's load would flag them.
# Both parts always run; the target fails if either did.
PYTEST := $(PY) -m pytest -q -rs -p no:cacheprovider
test:
	$(PYTEST) -m "not privileged" -n auto; unit=$$?; \
	$(PYTEST) -m privileged; privileged=$$?; \
	exit $$((unit || privileged))

demo:
	.venv/bin/tcpprofile run examples/smoke.toml --db out/demo.duckdb
	.venv/bin/tcpprofile report --db out/demo.duckdb --out out/report

bench:
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(BUILD)
