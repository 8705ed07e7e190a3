// Shared by the build scripts of the crates whose tests need a real server (`redis/build.rs`,
// the root crate's `build.rs`): whether this machine can run those tests.

/// Emits `cfg(<cfg>)` when no server can be had for the tests: `url_var` is unset and
/// `program` is on no folder of the `PATH`, and this is not CI (`CI=true`, where a test that
/// needs a server must run, and fails without one). Tests mark themselves
/// `#[cfg_attr(<cfg>, ignore = "…")]`, so the test summary counts them as ignored, with the
/// reason beside each, instead of passing them unrun. The probe runs again when the variable,
/// `CI`, the `PATH` or a folder of it changes (a server installed later is seen).
#[allow(dead_code)]
fn probe(program: &str, url_var: &str, cfg: &str) {
    println!("cargo::rustc-check-cfg=cfg({cfg})");
    println!("cargo::rerun-if-env-changed={url_var}");
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-env-changed=PATH");
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let url = std::env::var_os(url_var).is_some_and(|v| !v.is_empty());
    let mut found = false;
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let path = dir.join(program);
        if path.is_file() {
            println!("cargo::rerun-if-changed={}", path.display());
            found = true;
            break;
        }
        if dir.is_dir() {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
    }
    if !(ci || url || found) {
        println!("cargo::rustc-cfg={cfg}");
    }
}
