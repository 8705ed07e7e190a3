//! Conformance: the embedded broker against the fenced reference broker, through the shared
//! suite (`leasehold-conformance`): 600 operation sequences, identical outputs and state after
//! every step; beyond the contract, the broker's scan hints are checked after every step.
#![cfg(not(loom))]

use leasehold_conformance::Suite;
use leasehold_embedded::EmbeddedBackend;
use leasehold_model::{BrokerConfig, Variant};

#[test]
fn embedded_matches_pure_broker() {
    let ran = Suite::new(Variant::Fenced)
        .cases(600)
        .run(EmbeddedBackend::new, |embedded, _, _| {
            // The scan hints bound what they claim to (a wrong one would hide a record from a
            // fetch or an expiry, which the comparison may not reach).
            embedded
                .broker()
                .audit_scan_hints()
                .map_err(|e| format!("scan hints: {e}"))
        });
    if let Err(e) = ran {
        panic!("{e}");
    }
}

#[test]
fn only_the_fenced_protocol_is_accepted() {
    for &variant in Variant::ALL {
        let config = BrokerConfig {
            group_count: 1,
            lease_ms: 10,
            max_attempts: 3,
            variant,
        };
        let result = EmbeddedBackend::new(&config);
        assert_eq!(result.is_ok(), variant == Variant::Fenced, "{variant}");
        if let Err(message) = result {
            assert!(message.contains(variant.name()), "{message}");
        }
    }
}

#[test]
fn impossible_configurations_are_refused_not_panicked() {
    let base = BrokerConfig {
        group_count: 1,
        lease_ms: 10,
        max_attempts: 3,
        variant: Variant::Fenced,
    };
    for config in [
        BrokerConfig {
            group_count: 0,
            ..base
        },
        BrokerConfig {
            max_attempts: 0,
            ..base
        },
        BrokerConfig {
            max_attempts: 1 << 20,
            ..base
        },
    ] {
        assert!(EmbeddedBackend::new(&config).is_err(), "{config:?}");
    }
}
