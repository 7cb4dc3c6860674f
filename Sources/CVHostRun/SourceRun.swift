import CVHostAnalytics
import CVHostCore
import CVHostEvidence
import CVHostMotion
import CVHostPlugins
import CVHostSources
import CVHostV4L2

/// One input of a run and all that serves it: its capture device and session (with its own
/// capture thread), a PluginRunner per --plugin (its own instances, queues and metrics), and
/// the report that writes its lines under its source id. Inputs of one run share nothing but
/// the plugins' code and stdout: one that fails or ends leaves the others running.
final class SourceRun: Sendable {
    let id: String
    /// What it reads, as given (--input, --device, or added while running).
    let spec: InputSpec
    let device: CaptureDevice
    let session: CaptureSession
    let report: SourceReport
    var runners: [PluginRunner] { report.runners }
    /// Its motion, looked for by the host (--motion); nil when it is not.
    let motion: MotionWatch?
    /// The camera's stream its clips (and from=record snapshots) are taken from (`record=`); nil when they come from its own.
    let record: RecordStream?

    /// - Parameter tagLogs: put the id in front of this input's messages on stderr (a run with several inputs).
    /// - Parameter evidence: sees the input's encoded packets (clips) and each frame's results of its plugins (snapshots, clips' events).
    /// - Parameter motion: how its motion is looked for (--motion), and where not (its masks).
    init(id: String, spec: InputSpec, device: CaptureDevice, session: CaptureSession, runners: [PluginRunner], lines: RunLines,
         deviceSettings: [SettingReport], frameLimit: UInt64?, tagLogs: Bool, evidence: Evidence? = nil,
         motion: (settings: MotionSettings, masks: [BoxMask])? = nil) throws {
        self.id = id
        self.spec = spec
        self.device = device
        self.session = session
        report = SourceReport(source: id, logSource: tagLogs ? id : nil, runners: runners, lines: lines, deviceSettings: deviceSettings,
                              evidence: evidence, motion: motion?.settings)
        session.frameLimit = frameLimit
        let clock = RecordStream.DetectClock()
        if let url = spec.record, let evidence, let observer = evidence.recordObserver(forInput: id) {
            record = RecordStream(url: url, observer: observer, clock: clock)
        } else {
            if spec.record != nil {
                Log.warning("record= is the stream clips (--clips) and snapshots (--snapshots DIR:from=record) are taken from: without "
                            + "either it is not read", source: tagLogs ? id : nil)
            } else if evidence?.snapshotsFromRecord == true {
                Log.warning("--snapshots from=record: this input has no record stream (--input NAME=URL,record=URL): its snapshots are of its frames",
                            source: tagLogs ? id : nil)
            }
            record = nil
        }
        // The record stream is read while the input runs (from its start), and let go before its clip is finished.
        let logSource = tagLogs ? id : nil
        session.eventHandler = { [report, record] event in
            switch event {
            case .started: record?.start(logSource: logSource)
            case .stopped: record?.stop()
            default: break
            }
            report.handle(event)
        }
        try session.addInput(CaptureDeviceInput(device: device))
        self.motion = motion.map { m in
            MotionWatch(settings: m.settings, masks: m.masks) { [lines] change in lines.write(SessionEventLines.motion(change, source: id)) }
        }
        session.analyzer = self.motion
        session.beginConfiguration()
        for r in runners { try session.addOutput(r.output) }
        session.commitConfiguration()
        if let evidence { try keepEvidence(evidence, tagLogs: tagLogs, clock: clock) }
    }

    /// The evidence room sees the input's encoded packets (clips; a raw input's frames encoded for
    /// them) and each frame's results of its plugins, after their analytics (snapshots, clips' events).
    /// With a record stream, the input's own packets only set the time its packets are put at (`clock`).
    private func keepEvidence(_ evidence: Evidence, tagLogs: Bool, clock: RecordStream.DetectClock) throws {
        if let encoded = device as? EncodedStreamSource {
            encoded.packetObserver = record == nil ? evidence.observer(forInput: id) : clock
        } else if !(device is StillImageDevice), let encoder = evidence.encoderOutput(forInput: id) {
            session.beginConfiguration()
            try session.addOutput(encoder)
            session.commitConfiguration()
        } else if evidence.keepsClips {
            Log.warning("--clips: \(id) is still images: no clips of it; its snapshots are kept (--snapshots)", source: tagLogs ? id : nil)
        }
        for r in runners { r.subscribe(evidence) }
    }

    var isStopped: Bool { session.waitUntilStopped(timeout: 0) }

    /// Says on stderr how many damaged packets were skipped, if any.
    func warnOfDamage() {
        if let source = device as? DamageReporting, source.damagedPackets > 0 {
            Log.warning("\(source.localizedName): \(source.damagedPackets) damaged packets skipped (FFmpeg concealed what it could; -v shows its messages)",
                        source: report.logSource)
        }
    }
}

extension SourceRun {
    /// Its camera, when it reads one (one awaited since the start once it came).
    var camera: V4L2CaptureDevice? { device as? V4L2CaptureDevice ?? (device as? V4L2AwaitedCamera)?.camera }
}
