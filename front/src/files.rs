//! Files the tool writes: atomically (write a temporary file, then rename), and for findings,
//! never over an existing file.

use crate::Error as UserError;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `contents` to `path` atomically: a reader sees the old file or the new one, never a
/// half-written one. Creates missing parent folders.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), UserError> {
    let fail =
        |what: &str, e: std::io::Error| UserError(format!("{}: {what}: {e}", path.display()));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| fail("cannot create folder", e))?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail("cannot write", e));
    }
    Ok(())
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
