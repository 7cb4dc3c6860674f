// librdkafka for Swift: its header, and the calls made of variadic macros (rd_kafka_producev),
// which Swift cannot import, as plain functions.
#ifndef CVHOST_CKAFKA_H
#define CVHOST_CKAFKA_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/// Produces one message to `topic` (copied: the caller's buffers may go at once) with `key`, the
/// headers `cvhost-event`, `cvhost-session` and `cvhost-event-id` (each skipped when NULL), and
/// `opaque` for its delivery report. Returns librdkafka's error code (RD_KAFKA_RESP_ERR_NO_ERROR).
rd_kafka_resp_err_t cvhost_kafka_produce(rd_kafka_t *rk, const char *topic, const void *key, size_t key_length,
                                         const void *value, size_t value_length, const char *event,
                                         const char *session, const char *event_id, void *opaque);

/// Asks the cluster for `topic`'s metadata (which makes it on a cluster that makes topics on
/// demand), waiting up to `timeout_ms`. Returns 0 when the topic has partitions and a leader
/// for them; else librdkafka's or the broker's error code, with why in `why`.
int cvhost_kafka_topic_ready(rd_kafka_t *rk, const char *topic, int timeout_ms, char *why, size_t why_size);

#endif
