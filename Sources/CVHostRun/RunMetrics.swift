import CVHostCore
import CVHostEvidence
import CVHostHTTP
import CVHostLines
import CVHostOutput
import CVHostPlugins
import Foundation
import Glibc

/// `GET /metrics`: the run in Prometheus' text format. The same counters as the metrics lines
/// (per input and plugin: frames offered, processed, failed, dropped by reason, results,
/// invalid results, queue depth; processing time and capture-to-result latency as histograms),
/// each input's state, the outputs, the live view, and the process's own (resident memory,
/// threads, CPU time, open descriptors), under the names Prometheus' client libraries give them.
enum RunMetrics {
    /// The states an input can be in, one gauge each (1 for the state it is in).
    static let states = ["starting", "running", "interrupted", "stopped"]

    static func exposition(sources: [SourceRun], output: OutputRouter, previews: [String: (viewers: Int, encoded: UInt64)],
                           eventClients: Int, server: HTTPServerStatistics?, evidence: EvidenceStatistics? = nil) -> String {
        var p = PrometheusExposition()
        p.gauge("cvhost_build_info", "cvhost's version, as a label; always 1.", [("version", Producer.version)], 1)
        for s in sources {
            let l = [("source", s.id)]
            let state = state(of: s)
            for name in states {
                p.gauge("cvhost_source_state", "1 for the state the input is in (starting, running, interrupted, stopped).",
                        l + [("state", name)], name == state ? 1 : 0)
            }
            p.counter("cvhost_source_frames_captured_total", "Frames the input delivered.", l, s.session.capturedFrameCount)
            if let lease = SourceLeases.lease(of: s.id) {
                p.gauge("cvhost_fleet_input_lease", "The revision of the site's lease this node runs the input by (--fleet), with the node's name: the inputs it owns.",
                        l + [("node", lease.node)], Double(lease.revision))
            }
            let health = InputHealth(s)
            p.gauge("cvhost_input_up", "1 while frames flow from the input (streaming); 0 starting, reconnecting or stopped.", l, health.healthy ? 1 : 0)
            p.counter("cvhost_input_reconnects_total", "Times the input came back after its camera or stream was lost (--reconnect).", l, health.reconnects)
            if let age = health.lastFrameAgeSeconds {
                p.gauge("cvhost_input_last_frame_age_seconds", "Seconds since the input's last frame was read.", l, age)
            }
            let lost = s.report.framesLost
            for why in FrameLossReason.allCases {
                p.counter("cvhost_source_frames_lost_total", "Frames the source lost before cvhost saw them (a gap, a corrupt frame).",
                          l + [("reason", why.rawValue)], lost[why] ?? 0)
            }
        }
        for r in sources.flatMap(\.runners) {
            r.expose(into: &p)
            r.tracked?.expose(into: &p)
        }
        if let e = evidence {
            p.counter("cvhost_clips_saved_total", "Clips written (--clips).", [], UInt64(e.clips))
            p.counter("cvhost_clip_bytes_total", "Bytes of the clips written.", [], e.clipBytes)
            p.counter("cvhost_clips_dropped_total", "Clips not kept: the folder's budget or its disk had no room.", [], UInt64(e.clipsDropped))
            p.counter("cvhost_snapshots_saved_total", "Snapshots written (--snapshots).", [], UInt64(e.snapshots))
            p.counter("cvhost_snapshot_bytes_total", "Bytes of the snapshots written.", [], e.snapshotBytes)
            for (folder, n) in [("clips", e.clipsDeleted), ("snapshots", e.snapshotsDeleted)] {
                p.counter("cvhost_evidence_files_deleted_total", "Files of cvhost's deleted from an evidence folder to keep its budget (max_gb, max_age, min_free_gb).",
                          [("folder", folder)], UInt64(n))
            }
            for reason in SnapshotRecorder.dropReasons {
                p.counter("cvhost_snapshots_dropped_total",
                          "Snapshots not made, by reason (disk_full: no room; busy: too many waiting; no_frame: no frame near the event kept; failed: not encoded).",
                          [("reason", reason)], UInt64(e.snapshotsDropped[reason] ?? 0))
            }
        }
        for o in output.statistics {
            let l = [("output", o.output)]
            p.counter("cvhost_output_lines_delivered_total", "Lines an output delivered (written, or acknowledged by the broker).", l,
                      o.delivered)
            for reason in OutputDropReason.allCases {
                p.counter("cvhost_output_lines_dropped_total", "Lines that did not reach an output, by reason.", l + [("reason", reason.rawValue)],
                          o.dropped[reason] ?? 0)
            }
            p.gauge("cvhost_output_lines_queued", "Lines waiting in an output's queue or spool, or in flight.", l, Double(o.queued))
            if let s = o.spooled { p.gauge("cvhost_output_lines_spooled", "Lines in a broker output's spool on disk not yet known to be delivered.", l, Double(s)) }
            if let u = o.unspooled { p.counter("cvhost_output_lines_unspooled_total", "Lines a broker output's spool disk refused (full, failing), sent from memory.", l, u) }
            if let c = o.connected {
                p.gauge("cvhost_output_connected", "1 while an output's broker is reachable.", l, c ? 1 : 0)
                p.counter("cvhost_output_lines_resent_total", "Lines a broker output published again (a lost connection, a failed delivery, an earlier run's spool).", l, o.resent)
                p.counter("cvhost_output_deliveries_failed_total", "Deliveries a broker reported as failed (each line is published again).", l, o.failed)
                if let h = o.latency {
                    p.histogram("cvhost_output_delivery_latency_seconds", "From a line's making to the broker's acknowledgement.", l, microseconds: h)
                }
            }
        }
        for (source, v) in previews.sorted(by: { $0.key < $1.key }) {
            p.gauge("cvhost_http_stream_viewers", "Clients of /stream.mjpg.", [("source", source)], Double(v.viewers))
            p.counter("cvhost_http_pictures_encoded_total", "Live-view pictures encoded as JPEG (only while someone watches).",
                      [("source", source)], v.encoded)
        }
        p.gauge("cvhost_http_event_clients", "Clients of /events.", [], Double(eventClients))
        server?.expose(into: &p)
        processMetrics(&p)
        return p.text
    }

    static func state(of s: SourceRun) -> String {
        if s.isStopped { return "stopped" }
        if s.session.isInterrupted { return "interrupted" }
        return s.session.isRunning ? "running" : "starting"
    }

    /// The process_* metrics of Prometheus' client libraries, from /proc/self.
    private static func processMetrics(_ p: inout PrometheusExposition) {
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        // /proc/self/stat: fields after the command's closing parenthesis (which may hold spaces).
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
            let f = stat[stat.index(after: close)...].split(separator: " ")
            // f[0] is field 3 (state): utime is field 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
            func field(_ n: Int) -> Double { n - 3 < f.count ? Double(f[n - 3]) ?? 0 : 0 }
            p.gauge("process_resident_memory_bytes", "Resident memory size in bytes.", [], field(24) * page)
            p.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", [], field(23))
            p.counter("process_cpu_seconds_total", "User and system CPU time spent in seconds.", [],
                      (field(14) + field(15)) / ticks)
            p.gauge("process_threads", "Threads of the process.", [], field(20))
            if let uptime = try? String(contentsOfFile: "/proc/uptime", encoding: .utf8), let up = Double(uptime.split(separator: " ")[0]) {
                let bootTime = Date().timeIntervalSince1970 - up
                p.gauge("process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.", [],
                        (bootTime + field(22) / ticks).rounded())
            }
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
        p.gauge("process_open_fds", "Open file descriptors.", [], Double(fds))
    }
}
