//! Files the tool writes: atomically (write a temporary file, then rename), and for findings,
//! never over an existing file.

use crate::Error as UserError;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether a report written to `path` is JSON: its name ends in `.json` (any other name gets
/// the text a command prints).
pub fn is_json(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("json"))
}

/// Refuses, before any work, a report path that cannot take a file (a folder): the report is
/// written at the end, and a long run should not end in that error.
pub fn check_report_path(flag: &str, path: &Path) -> Result<(), UserError> {
    if path.is_dir() {
        return Err(UserError(format!(
            "{flag} {}: is a folder, not a file",
            path.display()
        )));
    }
    Ok(())
}

/// Writes `contents` to `path` atomically: a reader sees the old file or the new one, never a
/// half-written one. Creates missing parent folders. `-` is standard output.
///
/// Atomic means a temporary file renamed over the target, which only a regular file (or a new
/// one) can take. A `path` that is something else is written through, never replaced: a
/// device or pipe (`/dev/stdout`, `/dev/null`, a FIFO) receives the bytes as it would from
/// any program, and a link is followed (the file it names is replaced, the link stays).
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), UserError> {
    let fail =
        |what: &str, e: std::io::Error| UserError(format!("{}: {what}: {e}", path.display()));
    if path.is_dir() {
        return Err(UserError(format!(
            "{}: is a folder, not a file",
            path.display()
        )));
    }
    if is_stdout(path) {
        let mut out = std::io::stdout().lock();
        return out
            .write_all(contents)
            .and_then(|()| out.flush())
            .map_err(|e| UserError(format!("standard output: cannot write: {e}")));
    }
    if is_stream(path) {
        // A device, a pipe, a socket: write to it as it is.
        let mut out = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| fail("cannot write", e))?;
        return out
            .write_all(contents)
            .and_then(|()| out.flush())
            .map_err(|e| fail("cannot write", e));
    }
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = match (is_link, fs::canonicalize(path)) {
        (false, _) => path.to_path_buf(),
        (true, Ok(real)) => real,
        // A link to nothing yet: create what it names, through it.
        (true, Err(_)) => return fs::write(path, contents).map_err(|e| fail("cannot write", e)),
    };
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| fail("cannot create folder", e))?;
    }
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = target.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, &target)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail("cannot write", e));
    }
    Ok(())
}

/// Whether `path` is a device, pipe or socket (`/dev/stdout`, a FIFO), or `-` (standard
/// output): written through by [`write_atomic`], and not a file a command should say it wrote.
pub fn is_stream(path: &Path) -> bool {
    is_stdout(path) || fs::metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir())
}

/// Whether `path` is standard output: `-`, as for most command-line tools, or a name of the
/// file standard output is (`/dev/stdout`, `/dev/fd/1`, the terminal's device).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-" || names_stdout(path)
}

#[cfg(unix)]
fn names_stdout(path: &Path) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Ok(named) = fs::metadata(path) else {
        return false;
    };
    let Ok(out) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    fs::File::from(out)
        .metadata()
        .is_ok_and(|out| (out.dev(), out.ino()) == (named.dev(), named.ino()))
}

#[cfg(not(unix))]
fn names_stdout(_path: &Path) -> bool {
    false
}

/// Writes `contents` to `dir/stem.ext`, or `dir/stem-2.ext`, `-3`, … — the first name that does
/// not exist yet — atomically and without ever replacing a file. Returns the path written.
pub fn write_new(dir: &Path, stem: &str, ext: &str, contents: &[u8]) -> Result<PathBuf, UserError> {
    fs::create_dir_all(dir)
        .map_err(|e| UserError(format!("{}: cannot create folder: {e}", dir.display())))?;
    for n in 1u32.. {
        let name = if n == 1 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let path = dir.join(name);
        let tmp = dir.join(format!(".{stem}.{ext}.tmp{}", std::process::id()));
        fs::write(&tmp, contents)
            .map_err(|e| UserError(format!("{}: cannot write: {e}", tmp.display())))?;
        // hard_link fails if the target exists: no existing file is ever replaced.
        let linked = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(UserError(format!("{}: cannot write: {e}", path.display()))),
        }
    }
    unreachable!("u32 names run out before the disk does")
}

/// Writes a `--report` file atomically: `json` (and a newline) when its name ends in `.json`,
/// else `text`; nothing without a path. Each is made only when it is the one written.
pub fn write_report(
    path: Option<&Path>,
    json: impl FnOnce() -> String,
    text: impl FnOnce() -> String,
) -> Result<(), UserError> {
    let Some(path) = path else {
        return Ok(());
    };
    let contents = if is_json(path) {
        format!("{}\n", json())
    } else {
        text()
    };
    write_atomic(path, contents.as_bytes())
}
