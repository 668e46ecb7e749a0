//! Reading declared files strictly beneath a bundle directory.
//!
//! Every component is opened relative to its parent with `O_NOFOLLOW`, so a
//! declared path cannot leave the bundle through a symlink (or use one at
//! all), and only regular files are read (a FIFO cannot stall activation,
//! a device cannot be read).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};
use sha2::{Digest, Sha256};

/// An open bundle directory.
pub(crate) struct BundleDir {
    fd: OwnedFd,
}

impl BundleDir {
    /// Opens the bundle directory itself (which may be reached through a
    /// symlinked plugin root).
    pub(crate) fn open(dir: &Path) -> io::Result<BundleDir> {
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(BundleDir { fd })
    }

    /// Opens a validated relative path beneath the bundle; fails on any
    /// symlink, a non-directory in the middle, or a non-regular file at the
    /// end. Returns the file and its size.
    pub(crate) fn open_file(&self, rel: &str) -> io::Result<(File, u64)> {
        let parts: Vec<&str> = rel.split('/').collect();
        let Some((last, dirs)) = parts.split_last() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty path"));
        };
        let mut current: Option<OwnedFd> = None;
        for part in dirs {
            if matches!(*part, "" | "." | "..") {
                return Err(unsafe_path());
            }
            let parent = current.as_ref().unwrap_or(&self.fd);
            let next = rustix::fs::openat(
                parent,
                *part,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(map_open_error)?;
            current = Some(next);
        }
        if matches!(*last, "" | "." | "..") {
            return Err(unsafe_path());
        }
        let parent = current.as_ref().unwrap_or(&self.fd);
        let fd = rustix::fs::openat(
            parent,
            *last,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(map_open_error)?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        Ok((File::from(fd), size))
    }

    /// Reads a whole declared file (the manifest), refusing more than `max` bytes.
    pub(crate) fn read(&self, rel: &str, max: u64) -> io::Result<Vec<u8>> {
        let (file, size) = self.open_file(rel)?;
        if size > max {
            return Err(too_large(max));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(max + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(too_large(max));
        }
        Ok(bytes)
    }

    /// Reads a whole declared file and hashes it in the same pass (each
    /// chunk is hashed while it is still in cache, then appended), refusing
    /// more than `max` bytes. The digest is of exactly the returned bytes.
    pub(crate) fn read_hashed(
        &self,
        rel: &str,
        max: u64,
        buf: &mut [u8],
    ) -> io::Result<(Vec<u8>, [u8; 32])> {
        let (file, size) = self.open_file(rel)?;
        if size > max {
            return Err(too_large(max));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let digest = stream(file, max, buf, |chunk| bytes.extend_from_slice(chunk))?;
        Ok((bytes, digest))
    }

    /// Streams a declared file through sha256 with a small reused buffer,
    /// refusing more than `max` bytes.
    pub(crate) fn hash(&self, rel: &str, max: u64, buf: &mut [u8]) -> io::Result<[u8; 32]> {
        let (file, size) = self.open_file(rel)?;
        if size > max {
            return Err(too_large(max));
        }
        stream(file, max, buf, |_| {})
    }
}

/// Reads `file` in `buf`-sized chunks, hashing each and handing it to
/// `sink`; fails past `max` bytes.
fn stream(
    file: File,
    max: u64,
    buf: &mut [u8],
    mut sink: impl FnMut(&[u8]),
) -> io::Result<[u8; 32]> {
    let mut reader = file.take(max + 1);
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if total > max {
            return Err(too_large(max));
        }
        hasher.update(&buf[..n]);
        sink(&buf[..n]);
    }
    Ok(hasher.finalize().into())
}
fn map_open_error(errno: rustix::io::Errno) -> io::Error {
    if errno == rustix::io::Errno::LOOP || errno == rustix::io::Errno::NOTDIR {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "declared path goes through a symlink or a non-directory",
        )
    } else {
        errno.into()
    }
}

fn unsafe_path() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "unsafe declared path")
}

fn too_large(max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("larger than the {max}-byte limit"),
    )
}
