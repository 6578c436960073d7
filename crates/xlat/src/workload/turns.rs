//! The order in which a team's per-thread streams are merged into one: round robin, [`TURN`]
//! records at a time, with barriers no record crosses. Both ways of producing a team's records
//! share it — algorithms on producer threads ([`super::emit::ThreadedSource`]) and loop kernels
//! stepped inline ([`super::kernel::KernelSource`]) — so one team's merged stream is the same
//! whichever produced it.

/// Records the merged stream takes from one thread of a team before turning to the next. Small,
/// because the engine keeps a queue per core: a thread whose records ran far ahead of the others'
/// would have to be buffered until theirs arrive.
pub const TURN: usize = 256;

#[derive(Clone, Copy, Default)]
struct Lane {
    /// Read up to a barrier: nothing more is taken from it until every thread got there.
    waiting: bool,
    /// Its algorithm ended and every record it emitted has been read.
    done: bool,
}

pub(super) struct Turns {
    lanes: Vec<Lane>,
    /// The thread whose turn it is, and the records its turn still takes.
    current: usize,
    turn: usize,
    turn_left: usize,
    /// A barrier opened and no record has been taken since: the next one is flagged
    /// [`Record::AFTER_BARRIER`](crate::trace::Record::AFTER_BARRIER).
    opened: bool,
    /// Where in the merged stream each barrier opened, for tests of the interleaving.
    #[cfg(test)]
    pub(super) barriers: Vec<u64>,
}

impl Turns {
    pub(super) fn new(threads: usize) -> Turns {
        // One thread has nobody to take turns with.
        let turn = if threads == 1 { usize::MAX } else { TURN };
        Turns {
            lanes: vec![Lane::default(); threads],
            current: 0,
            turn,
            turn_left: turn,
            opened: false,
            #[cfg(test)]
            barriers: Vec::new(),
        }
    }

    /// The thread whose records come next; `None` once every thread has finished.
    #[inline]
    pub(super) fn current(&self) -> Option<usize> {
        let lane = self.lanes.get(self.current)?;
        (!lane.done && !lane.waiting).then_some(self.current)
    }

    /// Records the current turn may still take.
    #[inline]
    pub(super) fn turn_left(&self) -> usize {
        self.turn_left
    }

    /// Whether a barrier opened since the last call: if so, the first record taken next is
    /// the first after the barrier.
    #[inline]
    pub(super) fn take_opened(&mut self) -> bool {
        std::mem::take(&mut self.opened)
    }

    /// The current thread's turn took `n` records; `emitted`: records merged so far.
    #[inline]
    pub(super) fn took(&mut self, n: usize, emitted: u64) {
        self.turn_left -= n;
        if self.turn_left == 0 {
            self.end_turn(emitted);
        }
    }

    /// The current thread reached a barrier after the records it gave so far. In a
    /// single-threaded program a barrier waits for nobody.
    pub(super) fn at_barrier(&mut self, emitted: u64) {
        if self.lanes.len() > 1 {
            self.lanes[self.current].waiting = true;
            self.end_turn(emitted);
        }
    }

    /// The current thread ended and all its records were taken.
    pub(super) fn finished(&mut self, emitted: u64) {
        self.lanes[self.current].done = true;
        self.end_turn(emitted);
    }

    /// End the current turn: the next thread in order that can run takes over. When every
    /// thread still running waits at the barrier, the barrier opens and the turns start again
    /// from the lowest thread, as all threads leave a barrier together.
    fn end_turn(&mut self, #[allow(unused)] emitted: u64) {
        self.turn_left = self.turn;
        let n = self.lanes.len();
        for step in 1..=n {
            let i = (self.current + step) % n;
            let lane = self.lanes[i];
            if !lane.done && !lane.waiting {
                self.current = i;
                return;
            }
        }
        let mut opened = false;
        for lane in self.lanes.iter_mut().filter(|l| !l.done) {
            lane.waiting = false;
            opened = true;
        }
        if opened {
            self.opened = true;
            #[cfg(test)]
            self.barriers.push(emitted);
            self.current = self.lanes.iter().position(|l| !l.done).unwrap_or(0);
        }
    }
}
