//! The front door's tests' scratch folders.

/// A folder `test` not yet made, in a scratch folder that is removed (with whatever the test
/// wrote) when the returned guard drops.
pub fn out(test: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::Builder::new()
        .prefix("leasehold-front-")
        .tempdir()
        .expect("a scratch folder");
    let dir = tmp.path().join(test);
    (tmp, dir)
}
