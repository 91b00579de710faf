PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: spark-lines wheel lock setup demo test lint bench clean browser docs docs-gen screenshots jars interop jvm jars35 interop35 jvm35

setup: $(STAMP)

lock:
	$(BIN)/uv pip compile --quiet pyproject.toml --extra dev --python-version 3.11.7 \
		--no-annotate --custom-compile-command "make lock" -o requirements.lock

# --compile-bytecode and compileall: the first command does not compile every module it imports;
# the prune keeps only the cache entries in use (a full disk once failed CI before its first test)
# The exact versions come from requirements.lock (pyproject.toml declares ranges, as a library
# does); `make lock` re-resolves it after a change of pyproject.toml.
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check uv==0.13.9
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -r requirements.lock
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python --no-deps -e .
	$(BIN)/uv cache prune --quiet  # each new venv leaves another ~1 GB build of PySpark's sdist in uv's cache
	$(BIN)/python -m compileall -q lakestats
	touch $(STAMP)

demo: setup
	$(BIN)/python -m lakestats.demo

# the browser test drives Debian's chromium (Playwright's own download is not used)
browser:
	@command -v chromium >/dev/null 2>&1 || { SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y chromium; }

# the docs site (mkdocs.yml); --strict: a broken link or a missing page fails
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# rewrite docs/reference/ from the parser, config.py and options.py (a test compares them)
docs-gen: setup
	$(BIN)/python docs/gen_reference.py

# docs/screenshots/: a wide, a skewed and a time-series table, analyzed and captured
screenshots: setup browser
	$(BIN)/python docs/screenshots.py

test: setup browser jars interop jvm jars35 interop35 jvm35 wheel spark-lines
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(VENV)/site
	$(BIN)/ruff check lakestats tests bench docs
	$(BIN)/lint-imports  # the layers contract in pyproject.toml: imports point down only
	$(BIN)/mypy  # the typed surface, strict ([tool.mypy] in pyproject.toml)
	$(BIN)/python -m pytest

bench: setup
	$(BIN)/python -m bench.analyze_tpch
	$(BIN)/python -m bench.lookup
	$(BIN)/python -m bench.reduce --incremental --scales 1,10
	$(BIN)/python -m bench.keep_factor

# Iceberg's Spark runtime (for interop checks of the Puffin files analyze commits), fetched with
# Maven into the ignored build/jars. It supports Spark 3.5, 4.0 and 4.1, not this venv's PySpark
# 4.3: it needs a PySpark 4.1 beside the default one to load.
ICEBERG_VERSION := 1.12.0
ICEBERG_SPARK := 4.1
ICEBERG_SCALA := 2.13
JARS := build/jars
ICEBERG_JAR := $(JARS)/iceberg-spark-runtime-$(ICEBERG_SPARK)_$(ICEBERG_SCALA)-$(ICEBERG_VERSION).jar

# Delta's Spark runtime (and its storage jar) for the Spark component's tests
DELTA_VERSION := 4.1.0
DELTA_JAR := $(JARS)/delta-spark_$(ICEBERG_SCALA)-$(DELTA_VERSION).jar
DELTA_STORAGE_JAR := $(JARS)/delta-storage-$(DELTA_VERSION).jar

jars: $(ICEBERG_JAR) $(DELTA_JAR) $(DELTA_STORAGE_JAR)

# lakestats' Spark component (jvm/, Java against Spark 4.1's API, every dependency provided):
# a session extension that gives Spark's optimizer lakestats' statistics on Iceberg and Delta
# scans (docs/spark.md). Built with Maven into the ignored build/jvm.
JVM_JAR := build/jvm/lakestats-spark.jar
JVM_SOURCES := $(shell find jvm/src -name '*.java' 2>/dev/null) jvm/pom.xml

jvm: $(JVM_JAR)

$(JVM_JAR): $(JVM_SOURCES)
	cd jvm && mvn -q -B package

# The wheel and the sdist (dist/), carrying the Spark component's jars for Spark 4.x and 3.5
# (lakestats/jars/; `lakestats.spark.jar_path()` picks the one matching the running Spark)
wheel: setup $(JVM_JAR) $(JVM35_JAR)
	rm -rf lakestats/jars dist && mkdir -p lakestats/jars
	cp $(JVM_JAR) $(JVM35_JAR) lakestats/jars/
	$(BIN)/uv build --quiet --out-dir dist

# Hudi and Paimon publish no Spark 4 runtime that Maven Central serves here: their Spark 3.5
# runtimes (Scala 2.12) run in a PySpark 3.5 beside the default, with the same component
# built against Spark 3.5 (`-P spark35`, the same sources) into build/jvm35 (docs/spark.md)
SPARK35_PYSPARK := 3.5.9
HUDI_VERSION := 0.15.0
PAIMON_VERSION := 0.9.0
JARS35 := build/jars35
HUDI_JAR := $(JARS35)/hudi-spark3.5-bundle_2.12-$(HUDI_VERSION).jar
PAIMON_JAR := $(JARS35)/paimon-spark-3.5-$(PAIMON_VERSION).jar
JVM35_JAR := build/jvm35/lakestats-spark-3.5.jar
INTEROP35_VENV := .venv-interop35
INTEROP35_STAMP := $(INTEROP35_VENV)/.installed-$(SPARK35_PYSPARK)

jars35: $(HUDI_JAR) $(PAIMON_JAR)

jvm35: $(JVM35_JAR)

interop35: $(INTEROP35_STAMP)

$(JVM35_JAR): $(JVM_SOURCES)
	cd jvm && mvn -q -B -P spark35 package

$(HUDI_JAR):
	mvn -q -B dependency:copy -Dartifact=org.apache.hudi:hudi-spark3.5-bundle_2.12:$(HUDI_VERSION) \
		-DoutputDirectory=$(JARS35)

$(PAIMON_JAR):
	mvn -q -B dependency:copy -Dartifact=org.apache.paimon:paimon-spark-3.5:$(PAIMON_VERSION) \
		-DoutputDirectory=$(JARS35)

$(INTEROP35_STAMP):
	$(PYTHON) -m venv $(INTEROP35_VENV)
	$(INTEROP35_VENV)/bin/pip install --quiet --disable-pip-version-check pyspark==$(SPARK35_PYSPARK)
	touch $(INTEROP35_STAMP)

# lakestats' own jobs on the older PySpark lines it supports (tests/e2e/test_spark_versions.py):
# the lock's versions with that PySpark instead, lakestats itself from this clone
SPARK_LINES := 3.5.9 4.0.2 4.1.4
SPARK_LINE_STAMPS := $(foreach v,$(SPARK_LINES),.venv-pyspark-$(v)/.installed)

spark-lines: $(SPARK_LINE_STAMPS)

.venv-pyspark-%/.installed: requirements.lock $(STAMP)
	$(PYTHON) -m venv .venv-pyspark-$*
	grep -v '^pyspark==' requirements.lock > .venv-pyspark-$*/requirements.txt
	$(BIN)/uv pip install --quiet --compile-bytecode --python .venv-pyspark-$*/bin/python \
		pyspark==$* -r .venv-pyspark-$*/requirements.txt
	$(BIN)/uv pip install --quiet --python .venv-pyspark-$*/bin/python --no-deps -e .
	touch $@

# the PySpark Iceberg's runtime supports, beside this venv's: tests run Spark with Iceberg's
# own runtime in it (tests/formats/test_iceberg_spark_interop.py), nothing of lakestats there
INTEROP_VENV := .venv-interop
INTEROP_PYSPARK := 4.1.4
INTEROP_STAMP := $(INTEROP_VENV)/.installed-$(INTEROP_PYSPARK)

interop: $(INTEROP_STAMP)

$(INTEROP_STAMP):
	$(PYTHON) -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/pip install --quiet --disable-pip-version-check pyspark==$(INTEROP_PYSPARK)
	touch $(INTEROP_STAMP)

$(ICEBERG_JAR):
	mvn -q -B dependency:copy \
		-Dartifact=org.apache.iceberg:iceberg-spark-runtime-$(ICEBERG_SPARK)_$(ICEBERG_SCALA):$(ICEBERG_VERSION) \
		-DoutputDirectory=$(JARS)

$(DELTA_JAR):
	mvn -q -B dependency:copy -Dartifact=io.delta:delta-spark_$(ICEBERG_SCALA):$(DELTA_VERSION) \
		-DoutputDirectory=$(JARS)

$(DELTA_STORAGE_JAR):
	mvn -q -B dependency:copy -Dartifact=io.delta:delta-storage:$(DELTA_VERSION) \
		-DoutputDirectory=$(JARS)

# A real Trino (docs/trino.md): trino-server from Maven Central (a tar.gz with every plugin,
# Iceberg's among them), unpacked into the ignored build-trino/. 476 is the newest Maven
# Central serves as a tarball; it runs on Java 25 (TRINO_JAVA_HOME).
TRINO_VERSION := 476
TRINO_DIR := build-trino
TRINO_HOME := $(TRINO_DIR)/trino-server-$(TRINO_VERSION)
TRINO_JAVA_HOME ?= /usr/lib/jvm/temurin-25-jdk-amd64

.PHONY: trino test-trino

trino: $(TRINO_HOME)/bin/launcher

$(TRINO_HOME)/bin/launcher:
	mvn -q -B dependency:copy -Dartifact=io.trino:trino-server:$(TRINO_VERSION):tar.gz \
		-DoutputDirectory=$(TRINO_DIR)
	tar -xzf $(TRINO_DIR)/trino-server-$(TRINO_VERSION).tar.gz -C $(TRINO_DIR)
	rm -f $(TRINO_DIR)/trino-server-$(TRINO_VERSION).tar.gz
	touch $@

# tests/formats/test_trino.py (marker `trino`, not in the default run): Trino reads the Puffin
# file analyze commits; it starts one Trino server (-Xmx1G) and stops it
test-trino: setup trino
	LAKESTATS_TRINO_HOME=$(abspath $(TRINO_HOME)) LAKESTATS_TRINO_JAVA_HOME=$(TRINO_JAVA_HOME) \
		$(BIN)/python -m pytest -m trino tests/formats/test_trino.py

clean:
	rm -rf $(VENV) $(INTEROP_VENV) $(INTEROP35_VENV) .venv-pyspark-* dist lakestats/jars warehouse .pytest_cache site
