//! Write-behind: the printer's rendered batches written to the output on a
//! thread of their own, so the thread that matches and renders does not
//! wait while the page cache copies its bytes (all book games as JSON
//! lines: about a fifth of the run's time). `zstd -d` writes the same way
//! (its default `--asyncio`).
//!
//! Invariants: batches are written whole and in the order handed over;
//! at most [`QUEUED`] batches wait while one is written, so memory stays
//! bounded whatever the output's speed; the first write error ends the
//! writing and is returned by the next [`WriteBehind::write`] or by
//! [`WriteBehind::finish`]; a run that writes nothing starts no thread.

use std::io::{self, IoSlice, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Batches handed over and waiting while another is written, at most.
const QUEUED: usize = 1;

/// A batch's buffers, of which the first `ready` are written, in order
/// (the empty ones skipped); all of them come back for the next batch.
struct Batch {
    buffers: Vec<Vec<u8>>,
    ready: usize,
}

/// An output written by a thread of its own (see the module docs).
pub(crate) struct WriteBehind<W: Write + Send + 'static> {
    state: State<W>,
}

enum State<W> {
    /// No batch written yet, or no thread could be started: the output,
    /// written here.
    Here(W),
    /// The writing thread: batches go to it, written buffers come back.
    Behind {
        batches: SyncSender<Batch>,
        recycled: Receiver<Vec<Vec<u8>>>,
        thread: JoinHandle<io::Result<W>>,
    },
    /// Finished, or the thread ended with an error that was returned.
    Done,
}

impl<W: Write + Send + 'static> WriteBehind<W> {
    /// Writes to `out`.
    pub(crate) fn new(out: W) -> Self {
        WriteBehind {
            state: State::Here(out),
        }
    }

    /// Hands the first `ready` of `buffers` over to be written after the
    /// batches before them; returns buffers for the next batch: a set
    /// already written when there is one (their memory kept), else empty.
    ///
    /// # Errors
    /// A batch handed over before could not be written (the writing has
    /// ended), or, without a writing thread, this one.
    pub(crate) fn write(
        &mut self,
        buffers: Vec<Vec<u8>>,
        ready: usize,
    ) -> io::Result<Vec<Vec<u8>>> {
        if let State::Here(_) = self.state {
            self.start();
        }
        match &mut self.state {
            State::Here(out) => {
                write_batch(out, &buffers[..ready.min(buffers.len())])?;
                Ok(buffers)
            }
            State::Behind {
                batches, recycled, ..
            } => {
                if batches.send(Batch { buffers, ready }).is_err() {
                    // The thread ended at a write error: it says which.
                    return Err(self.end().err().unwrap_or_else(gone));
                }
                Ok(recycled.try_recv().unwrap_or_default())
            }
            State::Done => Err(gone()),
        }
    }

    /// Waits until every batch is written, flushes the output and returns
    /// it.
    ///
    /// # Errors
    /// A batch or the flush could not be written.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        let mut out = self.end()?;
        out.flush()?;
        Ok(out)
    }

    /// Starts the writing thread with the output; keeps it here when no
    /// thread can be started.
    fn start(&mut self) {
        let State::Here(out) = std::mem::replace(&mut self.state, State::Done) else {
            return;
        };
        let (batches, queue) = mpsc::sync_channel::<Batch>(QUEUED);
        let (give_back, recycled) = mpsc::channel();
        // The output is handed over once the thread runs: a spawn that
        // fails leaves it here.
        let (hand_over, output) = mpsc::sync_channel::<W>(1);
        let spawned = std::thread::Builder::new()
            .name("cqlj-writer".into())
            .spawn(move || {
                let mut out = output.recv().map_err(|_| gone())?;
                for batch in queue {
                    write_batch(
                        &mut out,
                        &batch.buffers[..batch.ready.min(batch.buffers.len())],
                    )?;
                    // The printer may have stopped taking them back.
                    let _ = give_back.send(batch.buffers);
                }
                out.flush()?;
                Ok(out)
            });
        self.state = match spawned {
            Ok(thread) => match hand_over.send(out) {
                Ok(()) => State::Behind {
                    batches,
                    recycled,
                    thread,
                },
                // Not reached: the thread waits for the output.
                Err(mpsc::SendError(out)) => State::Here(out),
            },
            Err(_) => State::Here(out),
        };
    }

    /// Closes the queue and waits for the writing thread: its output or
    /// its error.
    fn end(&mut self) -> io::Result<W> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Behind {
                batches, thread, ..
            } => {
                drop(batches);
                thread
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the output's writer panicked")))
            }
            State::Here(out) => Ok(out),
            State::Done => Err(gone()),
        }
    }
}

impl<W: Write + Send + 'static> Drop for WriteBehind<W> {
    /// The batches handed over are written before the output is dropped
    /// (a run ending at an error still writes the games before it).
    fn drop(&mut self) {
        let _ = self.end();
    }
}

/// The error of a write after the writing ended.
fn gone() -> io::Error {
    io::Error::new(
        io::ErrorKind::BrokenPipe,
        "the output was closed after an error",
    )
}

/// Writes the non-empty `buffers` to `out` in order, in as few vectored
/// writes as it takes.
fn write_batch<W: Write>(out: &mut W, buffers: &[Vec<u8>]) -> io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = buffers
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| IoSlice::new(b))
        .collect();
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches come out whole and in order, only their ready buffers; the
    /// buffers come back for reuse.
    #[test]
    fn batches_are_written_in_order() {
        let mut w = WriteBehind::new(Vec::new());
        let mut expected = Vec::new();
        for round in 0..50u8 {
            let mut buffers = w.write(Vec::new(), 0).unwrap();
            buffers.resize_with(4, Vec::new);
            for (k, b) in buffers.iter_mut().enumerate() {
                b.clear();
                b.extend(std::iter::repeat_n(round, k * 3));
            }
            let ready = usize::from(round % 4) + 1;
            for b in &buffers[..ready] {
                expected.extend_from_slice(b);
            }
            let _ = w.write(buffers, ready).unwrap();
        }
        assert_eq!(w.finish().unwrap(), expected);
    }

    /// An output that fails: the error comes back at a later write or at
    /// the finish, never lost, and nothing panics.
    #[test]
    fn a_write_error_is_returned() {
        struct Failing(usize);
        impl Write for Failing {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::Error::other("disk full"));
                }
                self.0 -= 1;
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = WriteBehind::new(Failing(3));
        let mut failed = None;
        for _ in 0..100 {
            if let Err(e) = w.write(vec![vec![1u8; 10]], 1) {
                failed = Some(e);
                break;
            }
        }
        let e = match failed {
            Some(e) => e,
            None => w.finish().err().expect("the writes failed"),
        };
        assert_eq!(e.to_string(), "disk full");
    }

    /// A writer that writes nothing flushes its output and hands it back.
    #[test]
    fn nothing_written_starts_no_thread() {
        let w = WriteBehind::new(Vec::<u8>::new());
        assert!(matches!(w.state, State::Here(_)));
        assert!(w.finish().unwrap().is_empty());
    }
}
