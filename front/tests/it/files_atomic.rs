//! Atomic writes of reports and images: a regular file is replaced, a link written through, a
//! pipe written to, a folder refused.
#![cfg(unix)]

use leasehold_front::files::write_atomic;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leasehold-files-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_regular_file_is_replaced_and_missing_folders_are_made() {
    let dir = scratch("regular");
    let path = dir.join("a/b/out.txt");
    write_atomic(&path, b"one").unwrap();
    write_atomic(&path, b"two").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"two");
    assert_eq!(
        fs::read_dir(dir.join("a/b")).unwrap().count(),
        1,
        "no temporary file left"
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// A link is followed: the file it names gets the bytes, the link stays a link (also when
/// it names nothing yet).
#[test]
fn a_link_is_written_through_and_stays_a_link() {
    let dir = scratch("link");
    let (real, link) = (dir.join("real.svg"), dir.join("link.svg"));
    fs::write(&real, b"old").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    write_atomic(&link, b"new").unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&real).unwrap(), b"new");
    let (later, dangling) = (dir.join("later.svg"), dir.join("dangling.svg"));
    std::os::unix::fs::symlink(&later, &dangling).unwrap();
    write_atomic(&dangling, b"made").unwrap();
    assert!(fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&later).unwrap(), b"made");
    fs::remove_dir_all(&dir).unwrap();
}

/// A pipe (as `/dev/stdout` is under a shell's `|`) gets the bytes and stays a pipe: it is
/// never renamed over.
#[test]
fn a_pipe_is_written_to_not_replaced() {
    let dir = scratch("fifo");
    let fifo = dir.join("out.fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable: skipped");
        return;
    }
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    write_atomic(&fifo, b"<svg/>").unwrap();
    // (Checked first: had the pipe been renamed over, the reader would wait forever.)
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(reader.join().unwrap(), b"<svg/>");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_is_refused_in_one_line() {
    let dir = scratch("folder");
    let err = write_atomic(&dir, b"x").unwrap_err().to_string();
    assert!(err.ends_with("is a folder, not a file"), "{err}");
    assert!(dir.is_dir());
    fs::remove_dir_all(&dir).unwrap();
}
