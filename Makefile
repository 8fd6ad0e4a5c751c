# The two commands the README documents: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install run test lint bench clean web-install web-build web-test web-size llm-test-install

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	rm -f $(VENV)/.installed-*
	touch $@

# The tests' real model server: llama-cpp-python, built from source once. The build keeps only what
# the Python package loads (libllama, ggml): llama.cpp's tests, examples, tools and C++ server are
# off already (it is a subproject), but llama-cpp-python forces on llama.cpp's `common` library,
# never loaded from Python and over half of the compile: LLAMA_LEAN, run just after llama.cpp's
# project() (CMake's CMAKE_PROJECT_<name>_INCLUDE hook), turns it off there. LLAVA_BUILD=OFF drops
# libmtmd (multimodal chat). All cores. Measured on 2 busy cores: 4.3 min CPU, not 11.7.
# pip caches the wheel (~/.cache/pip/wheels, keyed by the sdist's URL and hash, not by CMAKE_ARGS),
# so fresh clones and venvs reuse it; `pip cache remove llama_cpp_python` forces a rebuild.
# GGML_NATIVE=OFF keeps that cached wheel portable.
LLM_STAMP := $(VENV)/.llm-test-$(shell cksum pyproject.toml | cut -d' ' -f1)
LLAMA_LEAN := $(VENV)/llama-lean.cmake

llm-test-install: $(LLM_STAMP)

$(LLM_STAMP): $(STAMP)
	printf 'set(LLAMA_BUILD_COMMON OFF)\n' > $(LLAMA_LEAN)
	CMAKE_BUILD_PARALLEL_LEVEL=$$(getconf _NPROCESSORS_ONLN) \
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/$(LLAMA_LEAN)" \
	  $(BIN)/pip install --quiet -e ".[llm-test]"
	rm -f $(VENV)/.llm-test-*
	touch $@

# The web UI (web/, React + Vite) builds into the Python package (src/plait/web_dist), which
# `plait serve` serves at /. npm install runs again when the lockfile changes; the build when a source does.
# `npm install`, not `npm ci`: the lockfile pins every version, but npm 11 against this registry
# records only this platform's optional rollup/esbuild binaries, which `npm ci` rejects as out of sync.
WEB_DEPS := web/node_modules/.installed
WEB_DIST := src/plait/web_dist/index.html
WEB_SRC := $(shell find web/src web/scripts -type f 2>/dev/null) web/index.html web/vite.config.ts web/tsconfig.json web/package.json

web-install: $(WEB_DEPS)

$(WEB_DEPS): web/package-lock.json
	cd web && npm install --no-audit --no-fund
	touch $@

web-build: $(WEB_DIST)

$(WEB_DIST): $(WEB_DEPS) $(WEB_SRC)
	cd web && npm run build
	touch $@

web-test: $(WEB_DEPS)
	cd web && npx vitest run

# The built JavaScript stays within its budget (600 kB gzipped).
web-size: web-build
	node web/scripts/size.mjs

# The web UI's run-event types (web/src/generated/events.ts) are generated from the events' JSON
# Schema, which `plait schema --events` derives from the event dataclasses. `make events` rewrites
# the file; `events-check` (part of lint) fails when it is stale.
.PHONY: events events-check

events: install $(WEB_DEPS)
	$(BIN)/plait schema --events | node web/scripts/gen-events.mjs

events-check: install $(WEB_DEPS)
	$(BIN)/plait schema --events | node web/scripts/gen-events.mjs --check

# The main job: the server on the embedded default (SQLite in ./.plait, in-process runs, examples imported).
run: install web-build
	$(BIN)/plait serve --host 127.0.0.1 --port $(or $(PORT),8000)

lint: install
	$(BIN)/ruff check src tests bench scripts
	$(BIN)/ruff format --check src tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/check_import_cycles.py
	$(MAKE) --no-print-directory events-check

test: lint llm-test-install web-test web-size
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/engine.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache .import_linter_cache .hypothesis web/node_modules src/plait/web_dist
