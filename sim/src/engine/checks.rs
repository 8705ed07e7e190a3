//! The oracle's checks at the end of each step and phase; what the broker says is settled.

use super::{Engine, RESTART_AUDIT_RECORDS_MAX, ROLLING_AUDIT_SLICE};
use crate::event::Event;
use leasehold_model::Backend;

impl<B: Backend> Engine<B> {
    /// A restart may have changed any record: a small broker is audited in full at the end of
    /// this step, a large one record by record over the next steps (and in full at the phase's
    /// end, as always).
    pub(super) fn after_restart_audit(&mut self) {
        let records = self.record_count();
        if records <= RESTART_AUDIT_RECORDS_MAX {
            self.oracle.restarted();
        } else {
            self.rolling_audit.remaining = records;
        }
    }

    /// Ends a step: the oracle checks what the step touched (I3, I4), a rolling audit reads its
    /// next slice, and new violations are emitted. A step that made no call changing the
    /// broker has nothing new to read ([`leasehold_model::Oracle::end_quiet_step`]), unless
    /// every step is audited in full.
    #[inline]
    pub fn end_step(&mut self) {
        // The usual quiet step of a campaign (nothing to read, audit, collect or record) ends
        // here, without entering the full step's larger code.
        let quiet = !self.backend_changed
            && !self.setup.audit_every_step
            && !cfg!(debug_assertions)
            && self.rolling_audit.remaining == 0
            && !self.oracle.any_violated()
            && self.recorder.is_none();
        if quiet {
            self.oracle.end_quiet_step();
        } else {
            self.end_step_full();
        }
    }

    /// [`Engine::end_step`] of a step that changed the broker, or that has more to do.
    #[inline(never)]
    fn end_step_full(&mut self) {
        if self.backend_changed || self.setup.audit_every_step {
            self.oracle.end_step(&self.backend);
            self.backend_changed = false;
        } else if cfg!(debug_assertions) {
            // Test builds check the argument on every quiet step: it named no record, and its
            // full checks find nothing new.
            assert!(
                self.oracle.touched_nothing(),
                "a step that did not change the broker named a record"
            );
            let before = self.oracle.violated_invariants().count();
            self.oracle.end_step(&self.backend);
            assert_eq!(
                self.oracle.violated_invariants().count(),
                before,
                "a step that did not change the broker broke an invariant"
            );
        } else {
            self.oracle.end_quiet_step();
        }
        if self.rolling_audit.remaining > 0 {
            self.audit_slice();
        }
        if self.oracle.any_violated() {
            self.collect_violations();
        }
        if let Some(recorder) = &mut self.recorder {
            recorder.end_step(&self.backend, self.leases.first_issuance());
        }
    }

    /// Reads the next [`ROLLING_AUDIT_SLICE`] records of the rolling audit.
    fn audit_slice(&mut self) {
        let events = self.backend.event_count();
        let groups = self.setup.groups.len();
        let mut budget = ROLLING_AUDIT_SLICE;
        let audit = &mut self.rolling_audit;
        while budget > 0 && audit.remaining > 0 && events > 0 {
            if audit.next_seq == 0 || audit.next_seq > events {
                audit.next_seq = 1;
                audit.group = (audit.group + 1) % groups;
            }
            let count = budget
                .min(events - audit.next_seq + 1)
                .min(audit.remaining.min(u64::from(u32::MAX)) as u32);
            self.oracle
                .audit_records(&self.backend, audit.group, audit.next_seq, count);
            audit.next_seq += count;
            audit.remaining -= u64::from(count);
            budget -= count;
        }
    }

    /// Reads every record and frontier and checks them against the oracle's ghost (I3, I4): the
    /// full audit drivers run at the end of each phase.
    pub fn audit(&mut self) {
        self.oracle.audit(&self.backend);
        self.rolling_audit.remaining = 0;
        self.collect_violations();
    }

    pub(super) fn collect_violations(&mut self) {
        if !self.oracle.any_violated() {
            return;
        }
        let found = self.oracle.violations().len();
        if found == self.violations_seen {
            return;
        }
        for index in self.violations_seen..found {
            let violation = self.oracle.violations()[index].clone();
            self.emit(self.now_ms, Event::Violated { violation });
        }
        self.violations_seen = found;
    }

    /// Whether every event of every group is acked or dead-lettered, as the broker says.
    pub fn all_settled(&self) -> bool {
        self.backend.unsettled_count() == 0
    }

    /// Records of every group the broker shows neither acked nor dead-lettered.
    pub fn unsettled_count(&self) -> u64 {
        self.backend.unsettled_count()
    }
}
