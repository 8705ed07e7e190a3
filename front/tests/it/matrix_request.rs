//! A matrix run named by flags ([`MatrixRequest`]): the report names only the flags that change
//! its content, the folder follows `--quick`, the variants and overrides are chosen by name.

use leasehold_front::matrix::{Depth, MatrixRequest};
use leasehold_model::{Invariant, Variant};
use std::path::PathBuf;

#[test]
fn the_report_names_only_the_flags_that_change_it() {
    let request = MatrixRequest {
        quick: true,
        variants: vec!["dlq-drop".into(), "fenced".into()],
        expect: vec!["dlq-drop=I2".into()],
        threads: 2,
        ..MatrixRequest::default()
    };
    assert_eq!(
        request.command(),
        "leasehold report --quick --variants dlq-drop,fenced --expect dlq-drop=I2"
    );
    assert_eq!(request.out_dir(), PathBuf::from("reports/quick"));
    let on_embedded = MatrixRequest {
        backend: "embedded".into(),
        out: Some("elsewhere".into()),
        ..MatrixRequest::default()
    };
    assert_eq!(on_embedded.command(), "leasehold report --backend embedded");
    assert_eq!(on_embedded.out_dir(), PathBuf::from("elsewhere"));
}

#[test]
fn the_config_has_the_variants_and_overrides_named() {
    let request = MatrixRequest {
        quick: true,
        variants: vec!["dlq-drop".into(), " fenced".into()],
        expect: vec!["fenced=I3".into()],
        threads: 3,
        ..MatrixRequest::default()
    };
    let config = request.config().expect("valid");
    // The matrix keeps its own order (`Variant::ALL`), whatever the order named.
    let chosen: Vec<Variant> = Variant::ALL
        .iter()
        .copied()
        .filter(|v| [Variant::DlqDrop, Variant::Fenced].contains(v))
        .collect();
    assert_eq!(config.variants, chosen);
    assert_eq!(config.depth, Depth::Quick);
    assert_eq!(config.threads, 3);
    let fenced = config.expectations[&Variant::Fenced];
    assert_eq!(fenced.violated, Some(Invariant::I3));
    assert!(fenced.overridden);
    // docs/variants.md: dlq-drop breaks I3, and nothing overrode it.
    let dlq_drop = config.expectations[&Variant::DlqDrop];
    assert_eq!(
        (dlq_drop.violated, dlq_drop.overridden),
        (Some(Invariant::I3), false)
    );
    for (request, expected) in [
        (
            MatrixRequest {
                variants: vec!["nope".into()],
                ..MatrixRequest::default()
            },
            "--variants: unknown variant 'nope'",
        ),
        (
            MatrixRequest {
                threads: 0,
                ..MatrixRequest::default()
            },
            "--threads 0: must be between 1 and 64",
        ),
    ] {
        let text = request.config().expect_err("refused").to_string();
        assert!(text.contains(expected), "{text}");
    }
}
