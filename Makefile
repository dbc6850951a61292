# tcpprofile build: native parts go to build/. Each part owns a fragment that adds to BUILD_TARGETS.
BUILD := build
PY := .venv/bin/python
BUILD_TARGETS :=

include native/build.mk
include bpf/build.mk

.PHONY: build test demo bench clean
build: $(BUILD_TARGETS)

test:   # -rs: every skipped test with its reason
	$(PY) -m pytest -q -rs -p no:cacheprovider

demo:
	.venv/bin/tcpprofile run examples/smoke.toml --db out/demo.duckdb
	.venv/bin/tcpprofile report --db out/demo.duckdb --out out/report

bench:
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(BUILD)
