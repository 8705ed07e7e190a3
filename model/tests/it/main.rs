//! The model crate's integration tests, one binary: each file is a module, `support` holds
//! what several of them share (the counting allocator is this binary's global allocator: it
//! counts per thread, so the tests that read it see only their own thread's allocations).

mod support {
    pub mod counting_alloc;
    pub mod published;
    pub mod reduced;
    pub mod reference_model;
}

mod blind_spots;
mod check_alloc;
mod check_broker_seam;
mod check_coverage;
mod check_coverage_cells;
mod check_fingerprint;
mod check_fingerprint_hash;
mod check_late_duplicates;
mod check_liveness;
mod check_model;
mod check_outcomes;
mod check_partial_order;
mod check_pinned;
mod check_reduction;
mod check_search;
mod check_subsumption;
mod check_table;
mod check_time;
mod core_views;
mod detail_words;
mod factory_redaction;
mod inline_vec;
mod lease_suite;
mod mutants_broker;
mod mutants_oracle;
mod mutants_runtime;
mod mutants_variant;
mod oracle_alloc;
mod oracle_checks;
mod oracle_ghosts;
mod oracle_props;
mod rabbitmq_channel;
mod runtime_table;
