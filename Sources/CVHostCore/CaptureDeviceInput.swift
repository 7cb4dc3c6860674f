/// A device as an input of a session (AVCaptureDeviceInput).
public final class CaptureDeviceInput: Sendable {
    public let device: CaptureDevice

    public init(device: CaptureDevice) {
        self.device = device
    }
}
