//! Generates the ABI's struct sizes, field offsets and constants from cvhost/plugin.h itself (a
//! small C program compiled with the system's C compiler and run), so that lib.rs checks its
//! `#[repr(C)]` mirrors against the header at compile time instead of against numbers typed in.
use std::{env, fs, path::PathBuf, process::Command};

const PROBE: &str = r#"
#include <cvhost/plugin.h>
#include <stdio.h>
#define SIZE(name, type) printf("pub const %s: usize = %zu;\n", name, sizeof(type))
#define OFFSET(name, type, field) printf("pub const %s: usize = %zu;\n", name, offsetof(type, field))
int main(void) {
    printf("pub const ABI_MAJOR: u16 = %d;\npub const ABI_MINOR: u16 = %d;\n", CVHOST_PLUGIN_ABI_MAJOR, CVHOST_PLUGIN_ABI_MINOR);
    printf("pub const PIXEL_FORMAT_GRAY8: u32 = %u;\n", (unsigned)CVHOST_PIXEL_FORMAT_GRAY8);
    printf("pub const OPTION_INT: u32 = %u;\n", (unsigned)CVHOST_OPTION_INT);
    printf("pub const PLUGIN_FLAG_STATELESS: u32 = %u;\n", (unsigned)CVHOST_PLUGIN_FLAG_STATELESS);
    SIZE("PLANE_SIZE", cvhost_plane);
    OFFSET("PLANE_FD", cvhost_plane, fd);
    OFFSET("PLANE_LENGTH", cvhost_plane, length);
    SIZE("FRAME_SIZE", cvhost_frame);
    OFFSET("FRAME_SEQUENCE", cvhost_frame, sequence);
    OFFSET("FRAME_PLANE_COUNT", cvhost_frame, plane_count);
    OFFSET("FRAME_PLANES", cvhost_frame, planes);
    SIZE("HOST_SIZE", cvhost_host);
    OFFSET("HOST_CONTEXT", cvhost_host, context);
    OFFSET("HOST_EMIT", cvhost_host, emit);
    OFFSET("HOST_SHARED", cvhost_host, shared);
    SIZE("OPTION_SPEC_SIZE", cvhost_option_spec);
    OFFSET("OPTION_SPEC_CHOICES", cvhost_option_spec, choices);
    SIZE("OPTION_VALUE_SIZE", cvhost_option_value);
    SIZE("HINTS_SIZE", cvhost_capture_hints);
    SIZE("DESCRIPTOR_SIZE", cvhost_plugin_descriptor);
    OFFSET("DESCRIPTOR_NAME", cvhost_plugin_descriptor, name);
    OFFSET("DESCRIPTOR_HINTS", cvhost_plugin_descriptor, hints);
    OFFSET("DESCRIPTOR_CREATE", cvhost_plugin_descriptor, create);
    OFFSET("DESCRIPTOR_DESTROY", cvhost_plugin_descriptor, destroy);
    OFFSET("DESCRIPTOR_SHARED_DESTROY", cvhost_plugin_descriptor, shared_destroy);
    return 0;
}
"#;

fn main() {
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let include = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../Sources/CVHostPluginABI/include");
    println!("cargo:rerun-if-changed={}", include.join("cvhost/plugin.h").display());
    println!("cargo:rerun-if-env-changed=CC");
    let source = out.join("layout_probe.c");
    let probe = out.join("layout_probe");
    fs::write(&source, PROBE).unwrap();
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc).arg("-I").arg(&include).arg(&source).arg("-o").arg(&probe).status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc}: {e}"));
    assert!(built.success(), "compiling the layout probe against {} failed", include.display());
    let run = Command::new(&probe).output().expect("cannot run the layout probe");
    assert!(run.status.success(), "the layout probe failed");
    fs::write(out.join("layout.rs"), run.stdout).unwrap();
}
