//! Files written whole or not at all.

use std::path::Path;

use anyhow::{Context, Result};

/// Writes to `FILE.tmp` beside `path` and renames it over `path` only when `write` succeeded, so
/// a failed or interrupted run never leaves a partial file under the real name.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<()>,
) -> Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = Path::new(&tmp_name);
    let result = (|| {
        let mut file = std::fs::File::create(tmp)
            .with_context(|| format!("failed to create {}", tmp.display()))?;
        write(&mut file)?;
        file.sync_all()
            .with_context(|| format!("failed to write {}", tmp.display()))?;
        std::fs::rename(tmp, path)
            .with_context(|| format!("failed to rename {} to {}", tmp.display(), path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    result
}
