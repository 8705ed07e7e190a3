//! A run template named by flags ([`TemplateRequest`]): no flag is the documented default
//! template, the faults given apply over `--no-faults`, pinned bounds are kept, refusals are one
//! line naming the flag.

use leasehold_front::defaults::sim_template;
use leasehold_front::sim_flags::TemplateRequest;
use leasehold_model::Variant;
use leasehold_sim::seeded::{Fault, Ratio};

#[test]
fn no_flag_is_the_default_template() {
    let (setup, pinned) = TemplateRequest::default().template().expect("valid");
    let expected = sim_template(Variant::Fenced).expect("valid");
    assert_eq!(format!("{setup:?}"), format!("{expected:?}"));
    assert!(!pinned.safety_ms_max && !pinned.steps_max);
}

#[test]
fn the_faults_given_apply_over_no_faults() {
    let one_in_ten: Ratio = "1/10".parse().expect("a ratio");
    let request = TemplateRequest {
        no_faults: true,
        faults: vec![(Fault::Drop, one_in_ten)],
        magnitudes: [None, Some(45_000), None, None, None, None, None, None],
        steps_max: Some(5_000),
        ..TemplateRequest::default()
    };
    let (setup, pinned) = request.template().expect("valid");
    for fault in Fault::ALL {
        let expected = if fault == Fault::Drop {
            one_in_ten
        } else {
            Ratio::ZERO
        };
        assert_eq!(setup.faults.ratio(fault), expected, "{fault:?}");
    }
    assert_eq!(setup.faults.pause_ms_max, 45_000);
    assert_eq!(setup.workload.steps_max, 5_000);
    assert!(pinned.steps_max && !pinned.safety_ms_max);
}

#[test]
fn refusals_name_the_flag() {
    for (request, expected) in [
        (
            TemplateRequest {
                variant: "nope".into(),
                ..TemplateRequest::default()
            },
            "--variant: unknown 'nope'",
        ),
        (
            TemplateRequest {
                policy: "later".into(),
                ..TemplateRequest::default()
            },
            "--policy: unknown 'later'",
        ),
        (
            TemplateRequest {
                workers: 0,
                ..TemplateRequest::default()
            },
            "--workers: must be at least 1",
        ),
    ] {
        let text = request.template().expect_err("refused").to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(expected), "{text}");
    }
}
