//! Where the moves of a movetext in export form end, found 64 bytes at a
//! time: the export path's way to the positions it writes notes at.
//!
//! In export form ([`game_flags::EXPORT_TEXT`]) the movetext is tokens
//! separated by single spaces or line breaks: move numbers (`12.`,
//! `12...`), moves, and the result last. A move is a token that a
//! separator follows and whose last byte is not a dot; the result has no
//! separator after it (it ends the movetext). So the ends of the moves
//! are the separators whose previous byte is not a dot, and a block's
//! ends are one bit mask: a few vector operations per 16 bytes, not a
//! decision per token.
//!
//! [`game_flags::EXPORT_TEXT`]: cqlj_runtime::store::game_flags::EXPORT_TEXT

/// The bytes a block covers (one bit each in its mask).
const BLOCK: usize = 64;

/// The ends of the moves of one movetext, in order: each call to
/// [`MoveEnds::advance`] passes some moves and gives where the last one
/// passed ends (the index of the separator after it).
///
/// Invariant: `mask` holds the ends in `base..base + BLOCK` not yet
/// passed, as bits `j` for index `base + j`; `base` is a multiple of
/// [`BLOCK`].
pub(super) struct MoveEnds<'t> {
    text: &'t [u8],
    base: usize,
    mask: u64,
}

impl<'t> MoveEnds<'t> {
    /// The ends of the moves of `text` (a movetext: its first byte starts
    /// a token), none passed yet.
    pub(super) fn new(text: &'t [u8]) -> Self {
        MoveEnds {
            text,
            base: 0,
            mask: block_ends(text, 0),
        }
    }

    /// Passes the next `n` moves (at least one) and returns the index of
    /// the separator after the last of them, or `None` if the text has
    /// fewer moves (then every later call is `None` too). Whole blocks are
    /// passed by counting their ends.
    #[inline]
    pub(super) fn advance(&mut self, n: u32) -> Option<usize> {
        let mut n = n.max(1);
        loop {
            // The ends left in this block, one at a time (most calls pass
            // one move: no count of the mask's bits).
            while self.mask != 0 {
                if n == 1 {
                    let end = self.base + self.mask.trailing_zeros() as usize;
                    self.mask &= self.mask - 1;
                    return Some(end);
                }
                self.mask &= self.mask - 1;
                n -= 1;
            }
            self.next_block()?;
            // Far from the move sought: whole blocks passed by their
            // counts.
            while n > SKIP_COUNTED {
                let here = self.mask.count_ones();
                if here >= n {
                    break;
                }
                n -= here;
                self.next_block()?;
            }
        }
    }

    /// Moves on to the next block (its ends in `mask`), if the text has
    /// one.
    fn next_block(&mut self) -> Option<()> {
        self.base += BLOCK;
        if self.base >= self.text.len() {
            self.mask = 0;
            self.base = self.text.len().next_multiple_of(BLOCK);
            return None;
        }
        self.mask = block_ends(self.text, self.base);
        Some(())
    }
}

/// The moves still to pass above which a block's ends are counted at once
/// rather than passed one by one.
const SKIP_COUNTED: u32 = 16;

/// The move ends in `text[base..base + BLOCK]` (bit `j` for index
/// `base + j`): the bytes below `!` whose previous byte (a line break
/// before the text's first) is not a dot.
fn block_ends(text: &[u8], base: usize) -> u64 {
    // The block with the byte before it: from the text where it has them
    // all, else copied into a buffer padded with a byte that is neither a
    // separator nor a dot (so the padding has no ends).
    if let Some(window) = base
        .checked_sub(1)
        .and_then(|from| text.get(from..from + BLOCK + 1))
        .and_then(|w| w.first_chunk::<{ BLOCK + 1 }>())
    {
        return window_ends(window);
    }
    let mut window = [b'x'; BLOCK + 1];
    window[0] = base.checked_sub(1).map_or(b'\n', |k| text[k]);
    let rest = text.get(base..).unwrap_or_default();
    let len = rest.len().min(BLOCK);
    window[1..=len].copy_from_slice(&rest[..len]);
    window_ends(&window)
}

/// Bit `j` set where `window[j + 1]` is below `!` and `window[j]` is not a
/// dot.
#[inline]
fn window_ends(window: &[u8; BLOCK + 1]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of every x86-64 processor, the only
    // requirement of `window_ends_sse2`.
    unsafe {
        window_ends_sse2(window)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        window_ends_swar(window)
    }
}

/// [`window_ends`] 16 bytes at a time (SSE2, part of every x86-64).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
#[inline]
fn window_ends_sse2(window: &[u8; BLOCK + 1]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8,
        _mm_movemask_epi8, _mm_set1_epi8,
    };
    let space = _mm_set1_epi8(b' ' as i8);
    let dot = _mm_set1_epi8(b'.' as i8);
    let mut ends = 0u64;
    for k in 0..BLOCK / 16 {
        let at = window.as_ptr().wrapping_add(16 * k);
        // SAFETY: both loads read 16 bytes inside `window` (65 bytes; the
        // second load of the last round reads bytes 49..65), unaligned
        // loads are allowed, and SSE2 is part of x86-64.
        let (prev, this) = unsafe {
            (
                _mm_loadu_si128(at.cast::<__m128i>()),
                _mm_loadu_si128(at.wrapping_add(1).cast::<__m128i>()),
            )
        };
        // Unsigned `this <= b' '`: the minimum with a space is itself.
        let separator = _mm_cmpeq_epi8(_mm_min_epu8(this, space), this);
        let after_dot = _mm_cmpeq_epi8(prev, dot);
        let bits = _mm_movemask_epi8(_mm_andnot_si128(after_dot, separator));
        ends |= u64::from(bits as u16) << (16 * k);
    }
    ends
}

/// [`window_ends`] eight bytes at a time in plain integers.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn window_ends_swar(window: &[u8; BLOCK + 1]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The top bit of byte `j` moved to bit `j` (no carries: the products'
    // bits are distinct).
    let gather = |high: u64| (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let mut ends = 0u64;
    for k in 0..BLOCK / 8 {
        let word = |from: usize| {
            window[from..from + 8]
                .first_chunk::<8>()
                .map_or(0, |w| u64::from_le_bytes(*w))
        };
        let (prev, this) = (word(8 * k), word(8 * k + 1));
        let separator = crate::import::plain::spaces_of(this);
        // Top bit of a dot: a zero byte of `prev ^ dots`.
        let x = prev ^ 0x2e2e_2e2e_2e2e_2e2e;
        let after_dot = !(((x & LOW7) + LOW7) | x) & HIGH;
        ends |= gather(separator & !after_dot) << (8 * k);
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ends byte by byte.
    fn naive(text: &[u8]) -> Vec<usize> {
        (0..text.len())
            .filter(|&k| text[k] < b'!' && (k == 0 || text[k - 1] != b'.'))
            .collect()
    }

    fn all(text: &[u8]) -> Vec<usize> {
        let mut ends = MoveEnds::new(text);
        std::iter::from_fn(|| ends.advance(1)).collect()
    }

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn ends_are_the_separators_after_moves() {
        let text = b"1. e4 e5 2. Nf3 Nc6\n3. Bb5 a6 1-0";
        assert_eq!(all(text), vec![5, 8, 15, 19, 26, 29]);
        assert_eq!(all(b"5... e5 6. Nf3 *"), vec![7, 14]);
        assert_eq!(all(b"*"), Vec::<usize>::new());
        assert_eq!(all(b""), Vec::<usize>::new());
    }

    #[test]
    fn every_way_agrees_with_bytes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b" \n.1a.\t\x00\xff!\x80\xae";
        for len in 0..300 {
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[(xorshift(&mut seed) % alphabet.len() as u64) as usize])
                .collect();
            let want = naive(&text);
            assert_eq!(all(&text), want, "{text:?}");
            // Passing several at once lands where passing one at a time
            // does.
            for step in [2, 3, 7, 40, 65, 200] {
                let mut ends = MoveEnds::new(&text);
                let got: Vec<usize> = std::iter::from_fn(|| ends.advance(step)).collect();
                let every: Vec<usize> = want
                    .iter()
                    .copied()
                    .skip(step as usize - 1)
                    .step_by(step as usize)
                    .collect();
                assert_eq!(got, every, "step {step} on {text:?}");
                assert_eq!(ends.advance(1), None);
            }
            // The two ways to read a window agree.
            for base in (0..text.len()).step_by(BLOCK) {
                let mut window = [b'x'; BLOCK + 1];
                window[0] = base.checked_sub(1).map_or(b'\n', |k| text[k]);
                let n = (text.len() - base).min(BLOCK);
                window[1..=n].copy_from_slice(&text[base..base + n]);
                assert_eq!(window_ends(&window), window_ends_swar(&window));
            }
        }
    }
}
