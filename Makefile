# The two commands the README documents: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	rm -f $(VENV)/.installed-*
	touch $@

# The main job: the server on the embedded default (SQLite in ./.plait, in-process runs, examples imported).
run: install
	$(BIN)/plait serve --host 127.0.0.1 --port $(or $(PORT),8000)

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

test: lint
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/engine.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
