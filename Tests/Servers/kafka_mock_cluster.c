// A Kafka cluster for tests: librdkafka's mock cluster (rdkafka_mock.h), brokers on loopback
// ports, hosted by this process until its stdin closes, so that cvhost and a consumer (kcat)
// connect to it as to a real cluster. Built by the tests with cc and -lrdkafka.
//
//   kafka_mock_cluster BROKERS
//
// The first line it prints is the bootstrap servers (host:port,...). Commands on stdin, each
// answered "ok" (or "error ..."):
//   topic NAME PARTITIONS   make a topic (replicated on every broker)
//   down ID | up ID         take broker ID (1..BROKERS) down (connections cut, none taken) or up
//   alldown | allup         every broker
//   produce-errors N CODE   the next N produce requests (to any broker) answered with error CODE
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int brokers = argc > 1 ? atoi(argv[1]) : 3;
    char error[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
    if (!rk) {
        fprintf(stderr, "kafka_mock_cluster: %s\n", error);
        return 1;
    }
    rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, brokers);
    if (!cluster) {
        fprintf(stderr, "kafka_mock_cluster: could not make the cluster\n");
        return 1;
    }
    printf("%s\n", rd_kafka_mock_cluster_bootstraps(cluster));
    fflush(stdout);
    char line[512], name[256];
    int a, b;
    while (fgets(line, sizeof line, stdin)) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (sscanf(line, "topic %255s %d", name, &a) == 2) {
            err = rd_kafka_mock_topic_create(cluster, name, a, brokers);
        } else if (sscanf(line, "down %d", &a) == 1) {
            err = rd_kafka_mock_broker_set_down(cluster, a);
        } else if (sscanf(line, "up %d", &a) == 1) {
            err = rd_kafka_mock_broker_set_up(cluster, a);
        } else if (sscanf(line, "produce-errors %d %d", &a, &b) == 2 && a > 0 && a <= 1000) {
            rd_kafka_resp_err_t codes[1000];
            for (int i = 0; i < a; i++) codes[i] = (rd_kafka_resp_err_t)b;
            rd_kafka_mock_push_request_errors_array(cluster, 0 /* Produce's ApiKey */, (size_t)a, codes);
        } else if (strncmp(line, "alldown", 7) == 0 || strncmp(line, "allup", 5) == 0) {
            for (b = 1; b <= brokers && !err; b++)
                err = line[3] == 'd' ? rd_kafka_mock_broker_set_down(cluster, b) : rd_kafka_mock_broker_set_up(cluster, b);
        } else {
            printf("error unknown command\n");
            fflush(stdout);
            continue;
        }
        if (err) printf("error %s\n", rd_kafka_err2str(err)); else printf("ok\n");
        fflush(stdout);
    }
    rd_kafka_mock_cluster_destroy(cluster);
    rd_kafka_destroy(rk);
    return 0;
}
