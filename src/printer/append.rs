//! Appending to a byte buffer through a cursor kept in registers: the
//! export path's many short copies (a move or two, a note, a number)
//! without the buffer's length read back from memory after each one.
//!
//! Through `Vec::extend_from_slice` each copy loads and stores the
//! vector's length, and a byte store may alias it, so the next copy waits
//! for the last. An [`Appender`] keeps the write position, the buffer's
//! start and its capacity as locals, and writes the length back once, when
//! it is dropped.

/// Appends to a `Vec<u8>` (see the module docs); its bytes are the
/// vector's once the appender is dropped.
///
/// Invariants: `ptr` and `cap` are `vec`'s buffer and capacity;
/// `vec.len() <= len <= cap`; the bytes below `len` are initialized.
pub(super) struct Appender<'v> {
    vec: &'v mut Vec<u8>,
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

impl<'v> Appender<'v> {
    /// Appends to `vec`, with room reserved for `additional` bytes (more
    /// is made as needed).
    pub(super) fn new(vec: &'v mut Vec<u8>, additional: usize) -> Self {
        vec.reserve(additional.saturating_add(16));
        Appender {
            ptr: vec.as_mut_ptr(),
            len: vec.len(),
            cap: vec.capacity(),
            vec,
        }
    }

    /// The bytes appended so far and before (the vector's length once
    /// dropped).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `n` more bytes.
    #[inline(always)]
    fn room(&mut self, n: usize) {
        if self.cap - self.len < n {
            (self.ptr, self.cap) = grow(self.vec, self.len, n);
        }
    }

    /// Appends the first `n` (at most 16) bytes of `bytes`: one 16-byte
    /// store, the position moved by `n`.
    #[inline(always)]
    pub(super) fn push16(&mut self, bytes: &[u8; 16], n: usize) {
        self.room(16);
        // SAFETY: `room` left at least 16 bytes of the buffer free after
        // `len`; an unaligned write of 16 bytes stays inside them.
        unsafe {
            self.ptr
                .add(self.len)
                .cast::<[u8; 16]>()
                .write_unaligned(*bytes);
        }
        self.len += n.min(16);
    }

    /// Appends `src`.
    #[inline]
    pub(super) fn extend(&mut self, src: &[u8]) {
        self.room(src.len());
        // SAFETY: `room` left `src.len()` bytes free after `len`; `src`
        // cannot overlap them (they are not initialized, no reference to
        // them exists).
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(self.len), src.len());
        }
        self.len += src.len();
    }

    /// Appends the first `n` bytes of `src` (at most its length) with each
    /// line break as a space: a short run (most often one or two moves) in
    /// one 16-byte copy.
    #[inline(always)]
    pub(super) fn push_spaced(&mut self, src: &[u8], n: usize) {
        match src.first_chunk::<16>() {
            Some(chunk) if n <= 16 => self.push16(&spaced16(*chunk), n),
            _ => self.extend_spaced(&src[..n]),
        }
    }

    /// Appends `src` with each line break as a space.
    #[inline]
    pub(super) fn extend_spaced(&mut self, src: &[u8]) {
        let from = self.len;
        self.extend(src);
        // SAFETY: the bytes `from..len` were just written (initialized,
        // inside the buffer), and nothing else refers to them while the
        // slice lives.
        let written = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(from), src.len()) };
        // A select, not a conditional store: vectorized.
        for b in written {
            *b = if *b == b'\n' { b' ' } else { *b };
        }
    }
}

impl Drop for Appender<'_> {
    fn drop(&mut self) {
        // SAFETY: `len <= cap` and the bytes below `len` are initialized
        // (the invariants).
        unsafe { self.vec.set_len(self.len) };
    }
}

/// Grows `vec` (its first `len` bytes initialized) to have room for `n`
/// more bytes after them; its new buffer and capacity. A function of its
/// own, outside the appender, so that the appender's fields stay in
/// registers.
#[cold]
#[inline(never)]
fn grow(vec: &mut Vec<u8>, len: usize, n: usize) -> (*mut u8, usize) {
    // SAFETY: the caller's appender has initialized the bytes below `len`,
    // and `len` is at most the capacity.
    unsafe { vec.set_len(len) };
    vec.reserve(n.max(16).max(vec.capacity() / 2));
    (vec.as_mut_ptr(), vec.capacity())
}

/// `bytes` with each line break as a space.
#[inline(always)]
fn spaced16(mut bytes: [u8; 16]) -> [u8; 16] {
    for b in &mut bytes {
        *b = if *b == b'\n' { b' ' } else { *b };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_as_a_vector_does_and_grows() {
        let mut v = b"start".to_vec();
        v.shrink_to_fit();
        let mut want = v.clone();
        {
            let mut a = Appender::new(&mut v, 0);
            for k in 0..200usize {
                let mut chunk = [b'x'; 16];
                chunk[0] = b'0' + (k % 10) as u8;
                a.push16(&chunk, k % 17);
                want.extend_from_slice(&chunk[..k % 17]);
                let text = b"a\nb c\n\nd efghijklmnopqrstuvwxyz\n";
                let n = k % text.len();
                a.push_spaced(text, n);
                want.extend(text[..n].iter().map(|&b| if b == b'\n' { b' ' } else { b }));
                a.extend(&text[..k % 7]);
                want.extend_from_slice(&text[..k % 7]);
            }
            assert_eq!(a.len(), want.len());
        }
        assert_eq!(v, want);
    }
}
