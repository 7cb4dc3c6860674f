#include "ckafka.h"
#include <stdio.h>
#include <string.h>

rd_kafka_resp_err_t cvhost_kafka_produce(rd_kafka_t *rk, const char *topic, const void *key, size_t key_length,
                                         const void *value, size_t value_length, const char *event,
                                         const char *session, const char *event_id, void *opaque) {
    rd_kafka_headers_t *headers = rd_kafka_headers_new(3);
    if (event) rd_kafka_header_add(headers, "cvhost-event", -1, event, (ssize_t)strlen(event));
    if (session) rd_kafka_header_add(headers, "cvhost-session", -1, session, (ssize_t)strlen(session));
    if (event_id) rd_kafka_header_add(headers, "cvhost-event-id", -1, event_id, (ssize_t)strlen(event_id));
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY((void *)key, key_length),
        RD_KAFKA_V_VALUE((void *)value, value_length), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    // On success the message owns the headers; on failure they are still ours.
    if (err) rd_kafka_headers_destroy(headers);
    return err;
}

int cvhost_kafka_topic_ready(rd_kafka_t *rk, const char *topic, int timeout_ms, char *why, size_t why_size) {
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    if (!t) {
        snprintf(why, why_size, "%s", rd_kafka_err2str(rd_kafka_last_error()));
        return rd_kafka_last_error();
    }
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, t, &md, timeout_ms);
    if (!err && md) {
        if (md->topic_cnt < 1) {
            err = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
        } else if (md->topics[0].err) {
            err = md->topics[0].err;
        } else {
            for (int i = 0; i < md->topics[0].partition_cnt; i++) {
                if (md->topics[0].partitions[i].leader < 0) err = RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
            }
        }
    }
    if (err) snprintf(why, why_size, "%s", rd_kafka_err2str(err));
    if (md) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    return err;
}
