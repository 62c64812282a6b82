//! Faults on mapped store files. A [`crate::store::Store`] maps its file; if
//! another program truncates the file while it is mapped, reading a page
//! past the new end raises SIGBUS, which by default kills the process
//! without a word (exit status 135) and leaves its temporary files behind.
//!
//! [`install`] sets a SIGBUS handler (Linux): when the faulting address
//! lies in a registered store map (`register_map`, done by every open
//! store), it removes the registered temporary files ([`register_temp`]),
//! writes the binary's message to stderr and exits with the binary's exit
//! code, all with async-signal-safe calls (`unlink`, `write`, `_exit`).
//! Any other SIGBUS gets the default action.
//!
//! What is detected: a store file shortened while a process reads it, at
//! the first access to a page past the new end. What is not: bytes of the
//! file overwritten in place without changing its length (the map shows
//! the new bytes; accessors stay in bounds, so results may be wrong but
//! memory safety holds), and a shortened file whose lost pages are never
//! read again. cqlj's own writers never shorten or overwrite a mapped
//! range (see the `store` module docs).

use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};

/// Maps tracked at once; a map beyond that is not registered (its faults
/// get the default action).
const MAX_MAPS: usize = 64;
/// Temporary files tracked at once.
const MAX_TEMPS: usize = 16;
/// `start` of a slot being filled in.
const CLAIMED: usize = usize::MAX;

/// One registered map: `start .. end` (`start == 0`: free).
struct MapSlot {
    start: AtomicUsize,
    end: AtomicUsize,
}

static MAPS: [MapSlot; MAX_MAPS] = [const {
    MapSlot {
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
    }
}; MAX_MAPS];

/// NUL-terminated paths to unlink on a store fault (null: free).
static TEMPS: [AtomicPtr<u8>; MAX_TEMPS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_TEMPS];

/// The message written on a store fault ([`install`]).
static MESSAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static MESSAGE_LEN: AtomicUsize = AtomicUsize::new(0);
static EXIT_CODE: AtomicI32 = AtomicI32::new(2);

/// Keeps a map registered until dropped.
#[derive(Debug)]
pub(crate) struct MapGuard {
    slot: usize,
}

impl Drop for MapGuard {
    fn drop(&mut self) {
        let s = &MAPS[self.slot];
        s.end.store(0, Ordering::Release);
        s.start.store(0, Ordering::Release);
    }
}

/// Registers the mapped range `start .. start + len` as a store map;
/// `None` when the table is full or the range is empty.
pub(crate) fn register_map(start: usize, len: usize) -> Option<MapGuard> {
    let end = start.checked_add(len)?;
    if len == 0 || start == 0 || start == CLAIMED {
        return None;
    }
    for (k, s) in MAPS.iter().enumerate() {
        if s.start
            .compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            s.end.store(end, Ordering::Release);
            s.start.store(start, Ordering::Release);
            return Some(MapGuard { slot: k });
        }
    }
    None
}

/// Whether `addr` lies in a registered map (async-signal-safe: atomic
/// loads only).
fn in_store_map(addr: usize) -> bool {
    MAPS.iter().any(|s| {
        let start = s.start.load(Ordering::Acquire);
        start != 0 && start != CLAIMED && addr >= start && addr < s.end.load(Ordering::Acquire)
    })
}

/// Keeps a temporary file registered until dropped.
#[derive(Debug)]
pub struct TempGuard {
    slot: usize,
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        // The path's bytes are not freed: the handler may be reading them
        // on another thread (a few bytes per output file, for the
        // process's life).
        TEMPS[self.slot].store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// Registers a temporary file for removal if the process ends on a store
/// fault; `None` when the table is full or the path holds a NUL byte.
pub fn register_temp(path: &Path) -> Option<TempGuard> {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().into_owned().into_bytes();
    let c = std::ffi::CString::new(bytes).ok()?;
    let raw = c.into_raw().cast::<u8>();
    for (k, t) in TEMPS.iter().enumerate() {
        if t.compare_exchange(
            std::ptr::null_mut(),
            raw,
            Ordering::AcqRel,
            Ordering::Relaxed,
        )
        .is_ok()
        {
            return Some(TempGuard { slot: k });
        }
    }
    // SAFETY: `raw` came from `CString::into_raw` just above and was not
    // published, so this is its only owner.
    drop(unsafe { std::ffi::CString::from_raw(raw.cast()) });
    None
}

/// Installs the SIGBUS handler: a fault in a store map removes the
/// registered temporary files, writes `message` to stderr and exits with
/// `exit_code`. Call once, early in `main`. A no-op off Linux.
///
/// # Errors
/// `sigaction` fails.
pub fn install(message: &'static [u8], exit_code: i32) -> std::io::Result<()> {
    MESSAGE_LEN.store(message.len(), Ordering::Release);
    MESSAGE.store(message.as_ptr().cast_mut(), Ordering::Release);
    EXIT_CODE.store(exit_code, Ordering::Release);
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `action` is zero-initialised (a valid `sigaction`: empty
        // mask, no flags) and then given a handler of the SA_SIGINFO
        // signature; `sigemptyset` and `sigaction` get valid pointers to
        // it and a null old-action pointer, which they allow.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The SIGBUS handler. Only async-signal-safe calls: atomic loads,
/// `unlink`, `write`, `_exit`, `sigaction`.
#[cfg(target_os = "linux")]
extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t for a SA_SIGINFO
    // handler; for SIGBUS its si_addr field is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    if !in_store_map(addr) {
        // SAFETY: restoring the default action with a zeroed sigaction
        // (SIG_DFL = 0) is valid; returning re-executes the faulting
        // access, which now gets the default action.
        unsafe {
            let action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
        return;
    }
    for t in &TEMPS {
        let p = t.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a non-null entry is a NUL-terminated path from
            // `CString::into_raw` that is never freed.
            unsafe {
                libc::unlink(p.cast());
            }
        }
    }
    let (msg, len) = (
        MESSAGE.load(Ordering::Acquire),
        MESSAGE_LEN.load(Ordering::Acquire),
    );
    // SAFETY: `msg .. msg + len` is the `'static` message given to
    // `install` (or null with len 0, then nothing is written); write and
    // _exit are async-signal-safe.
    unsafe {
        if !msg.is_null() {
            libc::write(2, msg.cast(), len);
        }
        libc::_exit(EXIT_CODE.load(Ordering::Acquire));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_register_and_unregister() {
        let a = register_map(0x1000_0000, 0x2000).expect("slot");
        assert!(in_store_map(0x1000_0000) && in_store_map(0x1000_1fff));
        assert!(!in_store_map(0x1000_2000) && !in_store_map(0x0fff_ffff));
        drop(a);
        assert!(!in_store_map(0x1000_0000));
        assert!(register_map(0x1000, 0).is_none());
    }
}
