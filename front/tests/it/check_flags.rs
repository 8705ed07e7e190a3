//! A check named by flags ([`CheckRequest`]): what is left out takes the variant's default,
//! what is given overrides it, and every refusal is one line naming its flag.

use leasehold_front::check_flags::{loopback, CheckRequest};
use leasehold_model::check::{CheckConfig, Engine, Renews};
use leasehold_model::{AckPolicy, Variant};

#[test]
fn nothing_given_is_the_variants_default_configuration() {
    let request = CheckRequest {
        variant: "unfenced-settle".into(),
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!(
        format!("{config:?}"),
        format!("{:?}", CheckConfig::default_for(Variant::UnfencedSettle))
    );
    let options = request.options().expect("valid");
    assert_eq!(options.engine, Engine::Leasehold);
    assert!(options.symmetry);
    assert_eq!(options.limits.threads, 1);
}

/// With no flag, a variant expected to hold starts from its covering configuration and a
/// planted bug from its own; `--covering` and `--tailored` choose either for any variant.
#[test]
fn the_starting_configuration_is_covering_for_a_holding_variant_and_either_flag_chooses() {
    let config = |variant: &str, covering: bool, tailored: bool| {
        CheckRequest {
            variant: variant.into(),
            covering,
            tailored,
            ..CheckRequest::default()
        }
        .config()
    };
    for (variant, name) in [(Variant::Fenced, "fenced"), (Variant::DlqDrop, "dlq-drop")] {
        let holds = variant.expected_violation().is_none();
        let default = config(name, false, false).expect("valid");
        let covering = config(name, true, false).expect("valid");
        let tailored = config(name, false, true).expect("valid");
        assert_eq!(covering, CheckConfig::covering_for(variant), "{name}");
        assert_eq!(tailored, CheckConfig::tailored_for(variant), "{name}");
        assert_ne!(covering, tailored, "{name}");
        assert_eq!(default == covering, holds, "{name}");
        assert_eq!(default == tailored, !holds, "{name}");
        let both = config(name, true, true).expect_err("refused");
        assert!(both.to_string().contains("--tailored"), "{both}");
    }
    // Unbounded renews are untimed: the covering configuration's clock gives way.
    let unbounded = CheckRequest {
        renews: Some("unbounded".into()),
        ..CheckRequest::default()
    }
    .config()
    .expect("valid");
    assert!(!unbounded.time.timed());
    assert_eq!(unbounded.group_count, 2);
}

#[test]
fn what_is_given_overrides_the_default() {
    let request = CheckRequest {
        events: Some(2),
        workers: Some(2),
        policy: Some("ack_first".into()),
        crashes: Some(0),
        renews: Some("3".into()),
        no_symmetry: true,
        max_states: 1000,
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!((config.event_count, config.worker_count), (2, 2));
    assert_eq!(config.policy, AckPolicy::AckFirst);
    assert_eq!(config.budgets.crashes, 0);
    assert_eq!((config.renews, config.budgets.renews), (Renews::Budget, 3));
    let options = request.options().expect("valid");
    assert!(!options.symmetry);
    // The counterexample search is bounded by the search's own bound when that is smaller.
    assert_eq!(options.counterexample_states_max, 1000);
}

#[test]
fn refusals_are_one_line_naming_the_flag() {
    let refused = |request: CheckRequest| -> String {
        let error = match request.config() {
            Err(e) => e,
            Ok(_) => request.options().expect_err("refused"),
        };
        let text = error.to_string();
        assert_eq!(text.lines().count(), 1, "{text}");
        text
    };
    let cases = [
        (
            CheckRequest {
                variant: "nope".into(),
                ..CheckRequest::default()
            },
            "--variant: unknown variant 'nope'",
        ),
        (
            CheckRequest {
                policy: Some("later".into()),
                ..CheckRequest::default()
            },
            "--policy: unknown policy 'later'",
        ),
        (
            CheckRequest {
                renews: Some("many".into()),
                ..CheckRequest::default()
            },
            "--renews many: expected a number",
        ),
        (
            CheckRequest {
                fairness: Some("weak".into()),
                ..CheckRequest::default()
            },
            "--fairness weak: only with --renews unbounded",
        ),
        (
            CheckRequest {
                threads: 0,
                ..CheckRequest::default()
            },
            "--threads 0: must be between 1 and 64",
        ),
        (
            CheckRequest {
                engine: "stateright".into(),
                timed: true,
                ..CheckRequest::default()
            },
            "--for: stateright's checker cannot be stopped",
        ),
        (
            CheckRequest {
                time: Some("later".into()),
                ..CheckRequest::default()
            },
            "--time later: expected untimed or ticks",
        ),
        (
            CheckRequest {
                tick_ms: Some(1000),
                tailored: true,
                ..CheckRequest::default()
            },
            "--tick-ms: only with --time ticks",
        ),
        (
            CheckRequest {
                time: Some("ticks".into()),
                lease_ticks: Some(0),
                ..CheckRequest::default()
            },
            "--lease-ticks 0: must be between 1 and 16",
        ),
        (
            CheckRequest {
                time: Some("ticks".into()),
                renews: Some("unbounded".into()),
                ..CheckRequest::default()
            },
            "--time ticks: not with --renews unbounded",
        ),
        (
            CheckRequest {
                variant: "rabbitmq-channel".into(),
                time: Some("ticks".into()),
                ..CheckRequest::default()
            },
            "--time ticks: not with --variant rabbitmq-channel",
        ),
    ];
    for (request, expected) in cases {
        let text = refused(request);
        assert!(text.contains(expected), "{text}");
    }
}

#[test]
fn the_explorer_is_served_on_loopback_only() {
    assert_eq!(loopback("127.0.0.1:3000").expect("loopback").port(), 3000);
    assert!(loopback("[::1]:3000").is_ok());
    let text = loopback("10.0.0.1:3000").expect_err("refused").to_string();
    assert!(text.contains("loopback only"), "{text}");
    assert!(loopback("localhost").is_err());
}

/// `--time ticks` on an untimed configuration takes the default clock (ticks of 1 ms, leases of
/// 3 ticks, a skew of 1), each flag overriding one size; a configuration that is timed already
/// keeps its own sizes.
#[test]
fn time_flags_set_the_clock() {
    use leasehold_model::check::Time;
    let request = CheckRequest {
        time: Some("ticks".into()),
        tick_ms: Some(1000),
        tailored: true,
        ..CheckRequest::default()
    };
    let config = request.config().expect("valid");
    assert_eq!(
        config.time,
        Time::Ticks {
            tick_ms: 1000,
            lease_ticks: 3,
            skew_ticks: 1
        }
    );
    assert!(config
        .to_string()
        .ends_with("--time ticks --tick-ms 1000 --lease-ticks 3 --skew-ticks 1"));
    let mutant = CheckRequest {
        variant: "renew-keeps-timer".into(),
        skew_ticks: Some(2),
        ..CheckRequest::default()
    };
    let config = mutant.config().expect("valid");
    assert_eq!(
        config.time,
        Time::Ticks {
            tick_ms: 1,
            lease_ticks: 2,
            skew_ticks: 2
        }
    );
    let untimed = CheckRequest {
        variant: "renew-keeps-timer".into(),
        time: Some("untimed".into()),
        ..CheckRequest::default()
    };
    assert_eq!(untimed.config().expect("valid").time, Time::Untimed);
}
