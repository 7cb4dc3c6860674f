//! A cvhost plugin in Rust, against the C ABI of `cvhost/plugin.h` (ABI 1), with no crates:
//! reports a 16-bin histogram of each frame's luma and its darkest and brightest bins.
//!
//!   cargo build --release --manifest-path examples/rust-plugin/Cargo.toml
//!   cvhost run --plugin examples/rust-plugin/target/release/libcvhost_histogram.so --input testsrc --max-frames 10
//!
//! The structs mirror the header field by field (`#[repr(C)]`); the sizes are checked at compile
//! time against the ones the header pins. No panic may cross into the host: the crate aborts on
//! panic (Cargo.toml), and nothing here can panic on valid frames.
use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;

const ABI_VERSION: u32 = 1;
const PIXEL_FORMAT_GRAY8: u32 = u32::from_le_bytes(*b"GREY");
const OPTION_INT: u32 = 2;

#[repr(C)]
struct Plane { data: *const u8, stride: u32, width: u32, height: u32 }

#[repr(C)]
struct Frame {
    struct_size: u32, pixel_format: u32, width: u32, height: u32,
    sequence: u64, capture_time_ns: i64, presentation_time_ns: i64,
    plane_count: u32, flags: u32, planes: [Plane; 4], delivery_index: u64,
}

#[repr(C)]
struct Host {
    struct_size: u32,
    context: *mut c_void,
    emit: extern "C" fn(*mut c_void, *const c_char, *const c_char) -> c_int,
    log: extern "C" fn(*mut c_void, c_int, *const c_char),
    instance_index: u32, instance_count: u32, instance_group: u64,
}

#[repr(C)]
struct OptionSpec {
    name: *const c_char, kind: u32, default_value: *const c_char, help: *const c_char,
    min: f64, max: f64, choices: *const c_char,
}

#[repr(C)]
struct OptionValue { name: *const c_char, value: *const c_char }

#[repr(C)]
struct Hints { struct_size: u32, focus_range: u32, min_width: u32, min_height: u32 }

#[repr(C)]
struct Descriptor {
    abi_version: u32, struct_size: u32,
    name: *const c_char, version: *const c_char, description: *const c_char,
    pixel_formats: *const u32, pixel_format_count: u32, flags: u32,
    hints: Hints,
    options: *const OptionSpec, option_count: u32, option_spec_size: u32,
    create: extern "C" fn(*const Host, *const OptionValue, u32, *mut *mut c_void, *mut c_char, usize) -> c_int,
    process: extern "C" fn(*mut c_void, *const Frame) -> c_int,
    flush: Option<extern "C" fn(*mut c_void) -> c_int>,
    destroy: extern "C" fn(*mut c_void),
}

// The sizes cvhost/plugin.h pins (abi_layout.c), checked here at compile time.
const _: () = assert!(std::mem::size_of::<Frame>() == 152);
const _: () = assert!(std::mem::size_of::<Host>() == 48);
const _: () = assert!(std::mem::size_of::<OptionSpec>() == 56);
const _: () = assert!(std::mem::size_of::<Descriptor>() == 112);

// The descriptor's pointers are to static data: sharing it between threads is safe.
struct Static<T>(T);
unsafe impl<T> Sync for Static<T> {}

static FORMATS: [u32; 1] = [PIXEL_FORMAT_GRAY8];
static OPTIONS: Static<[OptionSpec; 1]> = Static([OptionSpec {
    name: c"step".as_ptr(), kind: OPTION_INT, default_value: c"4".as_ptr(),
    help: c"sample every Nth pixel in each direction".as_ptr(), min: 1.0, max: 64.0, choices: ptr::null(),
}]);

struct Histogram { host: *const Host, step: usize }

extern "C" fn create(host: *const Host, options: *const OptionValue, count: u32, out: *mut *mut c_void,
                     _error: *mut c_char, _error_size: usize) -> c_int {
    let mut step = 4;
    // Every declared option is passed, already checked by the host.
    for i in 0..count as usize {
        let option = unsafe { &*options.add(i) };
        if unsafe { CStr::from_ptr(option.name) } == c"step" {
            step = unsafe { CStr::from_ptr(option.value) }.to_str().ok().and_then(|v| v.parse().ok()).unwrap_or(4);
        }
    }
    unsafe { *out = Box::into_raw(Box::new(Histogram { host, step })) as *mut c_void };
    0
}

extern "C" fn process(instance: *mut c_void, frame: *const Frame) -> c_int {
    let this = unsafe { &*(instance as *const Histogram) };
    let frame = unsafe { &*frame };
    let plane = &frame.planes[0];
    let mut bins = [0u64; 16];
    for y in (0..plane.height as usize).step_by(this.step) {
        // The frame is borrowed until we return: read it in place.
        let row = unsafe { std::slice::from_raw_parts(plane.data.add(y * plane.stride as usize), plane.width as usize) };
        for &v in row.iter().step_by(this.step) {
            bins[(v >> 4) as usize] += 1;
        }
    }
    let darkest = bins.iter().position(|&n| n > 0).unwrap_or(0);
    let brightest = bins.iter().rposition(|&n| n > 0).unwrap_or(0);
    let list: Vec<String> = bins.iter().map(|n| n.to_string()).collect();
    let json = format!("{{\"bins\":[{}],\"darkest_bin\":{},\"brightest_bin\":{}}}\0", list.join(","), darkest, brightest);
    let host = unsafe { &*this.host };
    (host.emit)(host.context, c"histogram".as_ptr(), json.as_ptr() as *const c_char)
}

extern "C" fn destroy(instance: *mut c_void) {
    drop(unsafe { Box::from_raw(instance as *mut Histogram) });
}

static DESCRIPTOR: Static<Descriptor> = Static(Descriptor {
    abi_version: ABI_VERSION,
    struct_size: std::mem::size_of::<Descriptor>() as u32,
    name: c"histogram".as_ptr(),
    version: c"1.0.0".as_ptr(),
    description: c"16-bin luma histogram of each frame (an example plugin in Rust)".as_ptr(),
    pixel_formats: FORMATS.as_ptr(),
    pixel_format_count: 1,
    flags: 1, // CVHOST_PLUGIN_FLAG_STATELESS
    hints: Hints { struct_size: std::mem::size_of::<Hints>() as u32, focus_range: 0, min_width: 0, min_height: 0 },
    options: OPTIONS.0.as_ptr(),
    option_count: 1,
    option_spec_size: std::mem::size_of::<OptionSpec>() as u32,
    create,
    process,
    flush: None,
    destroy,
});

/// The entry symbol cvhost looks up.
#[no_mangle]
pub extern "C" fn cvhost_plugin_entry() -> *const c_void {
    &DESCRIPTOR.0 as *const Descriptor as *const c_void
}
