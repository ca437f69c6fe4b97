# idemgate — PGXS build. `make`, `make install`, `make installcheck`.
EXTENSION = idemgate
MODULE_big = idemgate

# One concern per file, the files in folders by layer (docs/architecture.md):
# every src/*.c and src/<layer>/*.c is part of the library. Includes name
# the layer: #include "core/guc.h".
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c src/*/*.c)))

# The version is written once, in idemgate.control (default_version).
EXTVERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(EXTENSION).control)

# Released scripts sit at the root and are frozen (idemgate--1.0.sql, ...).
# The version in development is assembled from sql/ (docs/architecture.md,
# "The SQL objects in sql/"): every table, function and view has one file
# holding its current definition (sql/tables, sql/functions, sql/views).
# sql/install.sql lists them for a fresh install (idemgate--$(EXTVERSION).sql);
# the update from the previous release is sql/<from>--$(EXTVERSION)/*.sql in
# name order, one file per feature, which include the definitions they add
# or change. An include is psql's \ir line, replaced here by the file it
# names (relative to the including file), so the parts also run as they
# are in psql. Both are build products (.gitignore); at the release both
# are frozen at the root.
UPDATE_DIR = $(firstword $(wildcard sql/*--$(EXTVERSION)))
UPDATE_PARTS = $(sort $(wildcard $(UPDATE_DIR)/*.sql))
SQL_OBJECTS = $(wildcard sql/*.sql sql/*/*.sql)
FRESH_SCRIPT = $(EXTENSION)--$(EXTVERSION).sql
UPDATE_SCRIPT_BUILT = $(EXTENSION)--$(notdir $(UPDATE_DIR)).sql
DATA_built = $(FRESH_SCRIPT) $(UPDATE_SCRIPT_BUILT)
DATA = $(filter-out $(DATA_built),$(wildcard $(EXTENSION)--*.sql))

PG_CPPFLAGS = -I$(srcdir)/src -DIDEMGATE_VERSION=\"$(EXTVERSION)\" -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare -Wno-cast-function-type
# OpenSSL (randomness, SHA-256), libcurl (HTTP), ICU (identities: NFKC case
# folding and the UTS #39 confusable skeleton; PostgreSQL links it too).
SHLIB_LINK = -lcrypto -lcurl -licui18n -licuuc

# Tests: pg_regress files in test/sql, isolation specs in test/specs, TAP in
# test/t. A temp instance preloads the library (test/idemgate.conf).
TEST_CONF = $(srcdir)/test/idemgate.conf
REGRESS = $(sort $(basename $(notdir $(wildcard test/sql/*.sql))))
REGRESS_OPTS = --inputdir=test --temp-instance=tmp_check_regress --temp-config=$(TEST_CONF)
ISOLATION = $(sort $(basename $(notdir $(wildcard test/specs/*.spec))))
ISOLATION_OPTS = --inputdir=test --temp-instance=tmp_check_isolation --temp-config=$(TEST_CONF)
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))
EXTRA_CLEAN = $(DATA_built) tmp_check_regress tmp_check_isolation output_iso results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuilt every time: a deleted or renamed part must not survive in them.
# assemble_sql: the files in order, each "\ir FILE" line replaced by FILE
# (one level: definitions include nothing); a missing FILE fails the build.
assemble_sql = awk 'FNR == 1 { dir = FILENAME; sub(/[^\/]*$$/, "", dir) } \
	/^\\ir / { f = dir $$2; n = 0; \
	  while ((r = (getline l < f)) > 0) { print l; n++ } \
	  if (r < 0 || n == 0) { print "missing or empty include: " f > "/dev/stderr"; exit 1 } \
	  close(f); next } \
	{ print }'
$(FRESH_SCRIPT): sql/install.sql $(SQL_OBJECTS) FORCE
	$(assemble_sql) sql/install.sql > $@ || { rm -f $@; exit 1; }
$(UPDATE_SCRIPT_BUILT): $(UPDATE_PARTS) $(SQL_OBJECTS) FORCE
	$(assemble_sql) $(UPDATE_PARTS) > $@ || { rm -f $@; exit 1; }
FORCE:

# Convenience targets used by scripts/test.sh.
regresscheck:
	$(pg_regress_installcheck) $(REGRESS_OPTS) $(REGRESS)
isolationcheck:
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) $(ISOLATION)
tapcheck:
	$(prove_installcheck)
.PHONY: regresscheck isolationcheck tapcheck FORCE

# PGXS does not track headers: a changed header rebuilds every object.
$(OBJS): $(wildcard src/*.h src/*/*.h)
