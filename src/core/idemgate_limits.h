/*-------------------------------------------------------------------------
 *
 * src/core/idemgate_limits.h
 *	  Every limit of idemgate, named once. A limit that appears in an
 *	  error message, a setting's range or an array size is written here
 *	  and nowhere else; README.md and docs/ quote these figures. (Not
 *	  limits.h: under -Isrc that name would shadow the C library's.)
 *
 *-------------------------------------------------------------------------
 */
#ifndef IDEMGATE_LIMITS_H
#define IDEMGATE_LIMITS_H

#include "datatype/timestamp.h"

/* Sizes of caller-supplied values, in bytes. */
#define IDEMGATE_MAX_KEY_BYTES			512		/* idempotency key */
/* workflow, effect type, alert name, actor, approver, operator, field names */
#define IDEMGATE_MAX_NAME_BYTES			200
/* effect target: key + type + target fit the outbox unique index (2704 bytes) */
#define IDEMGATE_MAX_TARGET_BYTES		1024
#define IDEMGATE_MAX_REASON_BYTES		2000	/* reason, note */
#define IDEMGATE_MAX_PROVIDER_ID_BYTES	1000
#define IDEMGATE_MAX_ERROR_CLASS_BYTES	100
#define IDEMGATE_MAX_URL_BYTES			2048
/* Bytes of SHA-256 kept as a host's fingerprint in endpoint_registered events. */
#define IDEMGATE_HOST_FINGERPRINT_BYTES	8
/* claim's origin: where the trigger came from */
#define IDEMGATE_MAX_ORIGIN_BYTES		200
/* Longest caller-supplied value echoed in an error message. */
#define IDEMGATE_MAX_ECHO_BYTES			64
/* Longest error text kept by fail and fail_effect (then a marker). */
#define IDEMGATE_MAX_ERROR_BYTES		8192

/* Effects in one enqueue_effect or request_approval. */
#define IDEMGATE_MAX_EFFECTS			1000
/* Headers of an endpoint: how many, and the longest name and value. */
#define IDEMGATE_MAX_HEADERS			50
#define IDEMGATE_MAX_HEADER_NAME_BYTES	256
#define IDEMGATE_MAX_HEADER_VALUE_BYTES	8192

/* A provider's response: the longest provider id kept, the deepest JSON parsed. */
#define IDEMGATE_MAX_RESPONSE_PROVIDER_ID_BYTES	1000
#define IDEMGATE_MAX_RESPONSE_JSON_DEPTH	100
/* Most bytes of a failed response's body kept in last_error. */
#define IDEMGATE_ERROR_BODY_KEPT_BYTES	1024

/* The dispatcher. */
#define IDEMGATE_MAX_DISPATCHERS		8		/* upper bound of idemgate.dispatchers */
#define IDEMGATE_MAX_IN_FLIGHT			1024	/* upper bound of idemgate.max_in_flight */
/* Longest HTTP request timeout an endpoint may set. */
#define IDEMGATE_MAX_REQUEST_TIMEOUT_SECS	(5 * SECS_PER_MINUTE)
#define IDEMGATE_MAX_REQUEST_TIMEOUT_USECS \
	((int64) IDEMGATE_MAX_REQUEST_TIMEOUT_SECS * USECS_PER_SEC)
/* Endpoints with a rate_limit or max_in_flight tracked at once (distinct types). */
#define IDEMGATE_RATE_LIMIT_ENTRIES		128
/*
 * Slack added to each rate_limit second when starts are spaced: a request
 * reaches the provider a variable time after its start is granted (the
 * dispatcher's loop, libcurl, a new connection), and two starts 1/rate
 * apart can arrive closer. Spacing them (1 s + this) / rate keeps any
 * one-second window at the provider within the rate while that variation
 * stays under this (deliveries run 2% under the rate).
 */
#define IDEMGATE_RATE_ARRIVAL_SLACK_USECS	20000
/*
 * On Citus, how long set_effect_policy tries for its lock when lock_timeout
 * is 0, and how often (src/policy/effect_policies.c).
 */
#define IDEMGATE_POLICY_LOCK_WAIT_MS	5000
#define IDEMGATE_POLICY_LOCK_STEP_MS	10
/* Highest rate_limit accepted (requests per second). */
#define IDEMGATE_MAX_RATE_LIMIT			1000000.0
/* Longest Retry-After a provider may ask for (parsing saturates here). */
#define IDEMGATE_MAX_RETRY_AFTER_SECS	(365 * SECS_PER_DAY)
/*
 * Longest Retry-After honoured (or idemgate.max_backoff when that is
 * longer): a retry waits that long, never less; a provider that asks for
 * more gets the effect dead-lettered instead of an early retry.
 */
#define IDEMGATE_MAX_HONOURED_RETRY_AFTER_SECS	(24 * SECS_PER_HOUR)

/*
 * A workflow's re-run endpoint (register_rerun) is the endpoint of effect
 * type "idemgate.rerun:<workflow>", which must fit an effect type's bytes:
 * the workflow name may be 15 bytes (the prefix) shorter. A re-post is
 * tried this many times (the workflow's own claim dedupes).
 */
#define IDEMGATE_RERUN_TYPE_PREFIX_BYTES	15
#define IDEMGATE_MAX_RERUN_WORKFLOW_BYTES \
	(IDEMGATE_MAX_NAME_BYTES - IDEMGATE_RERUN_TYPE_PREFIX_BYTES)
#define IDEMGATE_RERUN_MAX_ATTEMPTS		3

/* Longest lease claim_effects hands out. */
#define IDEMGATE_MAX_EFFECT_LEASE_SECS	SECS_PER_HOUR

/* Longest expires_in of an approval. */
#define IDEMGATE_MAX_APPROVAL_EXPIRY_USECS	((int64) 30 * USECS_PER_DAY)
/* How long an approval request made by review_sample waits for a decision. */
#define IDEMGATE_REVIEW_EXPIRY_USECS	((int64) USECS_PER_DAY)
/* Longest cancel_window of an effect type's policy. */
#define IDEMGATE_MAX_CANCEL_WINDOW_USECS	((int64) 7 * USECS_PER_DAY)
/* Longest interval of a watched workflow. */
#define IDEMGATE_MAX_WATCH_USECS		(INT64CONST(366) * USECS_PER_DAY)
/* Longest retention purge accepts. */
#define IDEMGATE_MAX_RETENTION_USECS	(INT64CONST(36500) * USECS_PER_DAY)
/* How far back prometheus() looks for its windowed figures. */
#define IDEMGATE_PROMETHEUS_WINDOW_USECS	(7 * USECS_PER_DAY)

/*
 * Alerts that name runs (docs/operations.md, "Alerts"): how many keys a
 * message, a NOTIFY payload and a Prometheus label list, and how much of
 * each key they show; the longest message a NOTIFY payload carries
 * (PostgreSQL refuses payloads of 8000 bytes or more).
 */
#define IDEMGATE_ALERT_FIRST_KEYS		3
#define IDEMGATE_ALERT_KEY_CHARS		64
#define IDEMGATE_ALERT_NOTIFY_MESSAGE_CHARS	1000
/*
 * Approved runs whose effects are all settled (docs/outbox.md, "Completing
 * a run"): how many the dispatcher looks at per second
 * (complete_settled_runs) and the most complete_settled_runs' argument may
 * ask for. (The unsettled_runs alert looks at the last 1000 approved runs,
 * a literal of alert_unsettled_runs, sql/1.2--1.3/20_failed_runs.sql.)
 */
#define IDEMGATE_SETTLED_RUNS_BATCH		500
#define IDEMGATE_MAX_SETTLED_RUNS_BATCH	100000
/* Upper bound of idemgate.alert_stalled_after. */
#define IDEMGATE_MAX_ALERT_STALLED_SECS	(7 * SECS_PER_DAY)
/* idemgate.alert_approval_wait at most 30 days. */
#define IDEMGATE_MAX_ALERT_APPROVAL_WAIT_SECS	(30 * SECS_PER_DAY)
/* idemgate.max_repairs at most 100 repairs of one run's output. */
#define IDEMGATE_MAX_REPAIRS	100
/* idemgate.tombstone_retention at most 10 years. */
#define IDEMGATE_MAX_TOMBSTONE_RETENTION_SECS	(3650 * SECS_PER_DAY)
/*
 * Payload mismatches (IG001) counted in shared memory per database and
 * workflow: how many workflows at once, and how long after its last
 * mismatch a workflow keeps the payload_mismatch alert firing.
 */
#define IDEMGATE_MISMATCH_SLOTS			128
#define IDEMGATE_MISMATCH_WINDOW_USECS	((int64) SECS_PER_HOUR * USECS_PER_SEC)

/* Upper bound of idemgate.max_backoff and idemgate.max_lease_life. */
#define IDEMGATE_MAX_WAIT_SETTING_SECS	(7 * SECS_PER_DAY)
/* Default of idemgate.retention. */
#define IDEMGATE_DEFAULT_RETENTION_SECS	(30 * SECS_PER_DAY)

/*
 * On Citus, how long past its expiry another node's dispatcher lease is
 * left to that node (which may be recording the outcome, held up by a
 * shard move) before this node settles it (docs/citus.md).
 */
#define IDEMGATE_FOREIGN_LEASE_GRACE_SECS 60

#endif							/* IDEMGATE_LIMITS_H */
