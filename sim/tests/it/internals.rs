//! The library's parts on their own, a module per source module: hashes, the coverage tally,
//! the live-lease table, the SVG ticks, the world's counts, and the seeded simulator's
//! generators, fault plans, setups, campaigns, summaries and shrinking.

/// The coverage probes' tallies over a campaign's seeds.
mod coverage {
    use leasehold_sim::coverage::{Coverage, Hits, Probe, ProbeTally, PROBES};

    fn hits(counts: &[(Probe, u64)]) -> Hits {
        let mut hits = Hits::default();
        for &(probe, count) in counts {
            for _ in 0..count {
                hits.hit(probe);
            }
        }
        hits
    }

    /// The first seed gives every probe its tally; the later seeds update them in place. The
    /// totals are the sums, the seed counts and the smallest seed of those that reached each.
    #[test]
    fn adding_seeds_sums_their_hits_and_keeps_the_smallest_seed() {
        let mut coverage = Coverage::default();
        coverage.add(5, &hits(&[(Probe::GhostWrite, 2)]));
        assert_eq!(coverage.0.len(), PROBES);
        coverage.add(
            2,
            &hits(&[(Probe::GhostWrite, 1), (Probe::FollowUpNack, 3)]),
        );
        coverage.add(9, &hits(&[(Probe::FollowUpNack, 1)]));
        coverage.add(7, &Hits::default());
        let tally = |hits, seeds, first_seed| ProbeTally {
            hits,
            seeds,
            first_seed,
        };
        assert_eq!(coverage.tally(Probe::GhostWrite), tally(3, 2, Some(2)));
        assert_eq!(coverage.tally(Probe::FollowUpNack), tally(4, 2, Some(2)));
        assert_eq!(coverage.tally(Probe::PausePastLease), tally(0, 0, None));
        assert_eq!(coverage.0.len(), PROBES);
        let reached = PROBES - coverage.never_reached().len();
        assert_eq!(reached, 2);
    }
}

/// The engine's parts.
mod engine {
    /// The engine's table of live leases.
    mod live {
        use leasehold_model::{Issuance, Lease, LeaseId};
        use leasehold_sim::engine::live::{End, LiveLease, LiveLeases};

        fn lease(issuance: u32, seq: u32) -> LiveLease {
            LiveLease {
                issuance: Issuance(issuance),
                lease: Lease {
                    lease_id: LeaseId(u64::from(issuance)),
                    group: 0,
                    seq,
                    attempt: 1,
                    deadline_ms: 100,
                    receipt: None,
                },
                holder: 0,
                holder_incarnation: 0,
                first_deadline_ms: 100,
                ended: None,
                refs: 1,
            }
        }

        /// A lease that ended with nothing naming it is gone for every query at once, whether it
        /// ended last or was released last, and its entry is dropped by the next issue.
        #[test]
        fn a_lease_that_left_is_gone_at_once_and_dropped_at_the_next_issue() {
            let mut table = LiveLeases::default();
            for i in 0..4 {
                table.issue(lease(i, i + 1));
            }
            // Lease 1: released, then ended. Lease 2: ended while named, then released.
            table.release(Issuance(1));
            assert!(table.get(Issuance(1)).is_some(), "not ended: it stays");
            table.end_as(Issuance(1), End::Settled);
            table.end_as(Issuance(2), End::Expired);
            assert!(table.get(Issuance(2)).is_some(), "still named: it stays");
            table.release(Issuance(2));
            for gone in [1, 2] {
                assert!(table.get(Issuance(gone)).is_none(), "lease {gone}");
                assert!(table.position(Issuance(gone)).is_none(), "lease {gone}");
            }
            assert_eq!(table.len(), 2);
            assert!(table.find_unended(0, 2, LeaseId(2)).is_none());
            // Named again, a lease that left does not come back through `retain`.
            table.retain(Issuance(1));
            assert!(table.get(Issuance(1)).is_none());
            // The first lease leaves too: the first lease held is now 3.
            table.release(Issuance(0));
            table.end_as(Issuance(0), End::Settled);
            assert_eq!(table.first_issuance(), Some(Issuance(3)));
            assert_eq!(table.leases.len(), 4, "hidden until the next issue");
            table.issue(lease(4, 9));
            assert_eq!(table.leases.len(), 2, "the issue's pass dropped them");
            assert_eq!(table.len(), 2);
            table.release(Issuance(3));
            table.release(Issuance(4));
            table.end_as(Issuance(3), End::Settled);
            table.end_as(Issuance(4), End::Settled);
            assert!(table.is_empty());
            assert_eq!(table.first_issuance(), None);
            // A lease brought back from a recording is found again, over its hidden entry.
            table.reinsert(lease(3, 4));
            assert_eq!(table.get(Issuance(3)).map(|l| l.refs), Some(1));
            assert_eq!(table.len(), 1);
        }
    }
}

/// The trace hash.
mod hash {
    use leasehold_sim::hash::TraceHasher;

    #[test]
    fn the_hash_is_pinned_and_sensitive_to_order_and_content() {
        let hash = |words: &[u64]| {
            let mut h = TraceHasher::new();
            for &w in words {
                h.word(w);
            }
            h.finish()
        };
        // Pinned: the function is part of the file format of recorded hashes.
        assert_eq!(hash(&[]), 0xf52a_15e9_a9b5_e89b);
        assert_ne!(hash(&[1, 2]), hash(&[2, 1]));
        assert_ne!(hash(&[0]), hash(&[]));
        assert_ne!(hash(&[0]), hash(&[0, 0]));
        let mut a = TraceHasher::new();
        a.text("max attempts");
        let mut b = TraceHasher::new();
        b.text("max attempt");
        assert_ne!(a.finish(), b.finish());
        assert_eq!(a.words(), 3);
    }
}

/// The seeded simulator's parts.
mod seeded {
    /// Campaigns: shards, stopping part-way, swarm draws.
    mod campaign {
        use leasehold_model::{AckPolicy, Variant};
        use leasehold_sim::seeded::campaign::{
            Campaign, SWARM_EVENTS_MAX, SWARM_FETCH_LIMIT_MAX, SWARM_LEASE_FACTOR_MAX,
        };
        use leasehold_sim::seeded::setup::Setup;
        use std::sync::atomic::{AtomicBool, Ordering};

        #[test]
        fn shards_stream_their_seeds_and_partition_the_range() {
            let mut c = Campaign::new(Setup::default_for(Variant::Fenced), 5..16);
            let mut all = Vec::new();
            for k in 1..=3 {
                c.shard = (k, 3);
                let seeds: Vec<u64> = c.shard_seeds().collect();
                assert_eq!(seeds.len() as u64, c.shard_len());
                all.extend(seeds);
            }
            all.sort_unstable();
            assert_eq!(all, (5..16).collect::<Vec<_>>());
            let huge = Campaign::new(Setup::default_for(Variant::Fenced), 0..10_000_000_000);
            assert_eq!(huge.shard_len(), 10_000_000_000);
            assert_eq!(huge.shard_seed(9_999_999_999), Some(9_999_999_999));
            let mut last =
                Campaign::new(Setup::default_for(Variant::Fenced), u64::MAX - 3..u64::MAX);
            last.shard = (3, 3);
            assert_eq!(last.shard_seeds().collect::<Vec<_>>(), [u64::MAX - 1]);
        }

        /// A campaign stopped part-way ran a prefix of its shard's seeds, and the campaign of that
        /// prefix gives the same summary (and hash), at one thread and at several, sharded or not.
        #[test]
        fn a_stopped_campaign_ran_a_prefix_that_reruns_to_the_same_summary() {
            for (threads, shard) in [(1, (1, 1)), (3, (1, 1)), (2, (2, 3))] {
                let mut c = Campaign::new(Setup::default_for(Variant::Fenced), 10..u64::MAX);
                c.threads = threads;
                c.shard = shard;
                let stop = AtomicBool::new(false);
                let ran = c.run_until(
                    &|tally| {
                        if tally.done >= 25 {
                            stop.store(true, Ordering::Relaxed);
                        }
                    },
                    &stop,
                );
                // Every thread finishes the seed it holds: at least 25, at most 25 + threads − 1.
                assert!(
                    (25..25 + threads as u64).contains(&ran.done),
                    "{}",
                    ran.done
                );
                assert_eq!(ran.summary.seeds_run, ran.done);
                let first = c.first(ran.done);
                assert_eq!(first.shard_len(), ran.done);
                assert_eq!(first.seeds.start, 10);
                assert_eq!(
                    first.run(&|_| {}),
                    ran.summary,
                    "{threads} threads, {shard:?}"
                );
                assert!(first.seeds_text().ends_with(&first.seeds.end.to_string()));
                assert_eq!(c.seeds_text(), "10..");
            }
            // Unstopped, a campaign runs every seed, and `first` of them all is itself.
            let c = Campaign::new(Setup::default_for(Variant::Fenced), 0..7);
            let ran = c.run_until(&|_| {}, &AtomicBool::new(false));
            assert_eq!(ran.done, 7);
            assert_eq!(c.first(7).seeds, 0..7);
            assert_eq!(c.first(9).seeds, 0..7);
        }

        #[test]
        fn swarm_draws_large_workloads_too() {
            let mut c = Campaign::new(Setup::default_for(Variant::Fenced), 0..1);
            c.swarm = true;
            let sizes: Vec<(u32, usize, usize)> = (0..400)
                .map(|seed| {
                    let s = c.setup(seed);
                    (s.events, s.group_names.len(), s.worker_names.len())
                })
                .collect();
            assert!(sizes.iter().any(|s| s.0 > 2_000));
            assert!(sizes.iter().any(|s| s.1 > 2) && sizes.iter().any(|s| s.2 > 3));
            let small = sizes.iter().filter(|s| s.0 <= 20).count();
            assert!(small > 250, "{small}");
            assert!(sizes.iter().all(|s| s.0 <= SWARM_EVENTS_MAX));
            assert_eq!(c.largest_setup().validate(), Ok(()));
        }

        /// The swarm varies what the model checker covers: the ack policy, the handler outcomes'
        /// rates, leases per fetch, the lease, one to four groups (small runs too); every draw is a
        /// setup the campaign's validation accepts, and a campaign without swarm draws none of it.
        #[test]
        fn swarm_draws_the_runtime_and_the_workload_too() {
            use std::collections::BTreeSet;
            let template = Setup::default_for(Variant::Fenced);
            let mut c = Campaign::new(template.clone(), 0..1);
            c.swarm = true;
            let (mut policies, mut rates, mut limits, mut leases, mut small_groups) = (
                BTreeSet::new(),
                BTreeSet::new(),
                BTreeSet::new(),
                BTreeSet::new(),
                BTreeSet::new(),
            );
            for seed in 0..400 {
                let s = c.setup(seed);
                assert_eq!(s.validate(), Ok(()), "seed {seed}");
                policies.insert(s.policy.name());
                let w = &s.workload;
                rates.insert((
                    w.outcome_ack.to_string(),
                    w.outcome_nack.to_string(),
                    w.outcome_reject.to_string(),
                ));
                limits.insert(w.fetch_limit);
                leases.insert(s.lease_ms);
                if s.events <= 3 {
                    small_groups.insert(s.group_names.len());
                }
                assert!(w.fetch_limit <= SWARM_FETCH_LIMIT_MAX);
                assert!(s.lease_ms <= template.lease_ms * SWARM_LEASE_FACTOR_MAX);
            }
            assert_eq!(policies.len(), AckPolicy::ALL.len(), "{policies:?}");
            assert!(rates.len() > 20, "{}", rates.len());
            assert_eq!(limits, BTreeSet::from([1, 2, 4]));
            let lease = template.lease_ms;
            assert_eq!(leases, BTreeSet::from([lease / 2, lease, lease * 2]));
            assert_eq!(small_groups, BTreeSet::from([1, 2, 3, 4]));
            let plain = Campaign::new(template.clone(), 0..1);
            let first = plain.setup(7);
            assert_eq!(
                (first.policy, first.lease_ms, first.workload.fetch_limit),
                (
                    template.policy,
                    template.lease_ms,
                    template.workload.fetch_limit
                )
            );
        }
    }

    /// Fault plans: swarm draws and their TOML form.
    mod faults {
        use leasehold_sim::seeded::faults::{Fault, FaultPlan};
        use leasehold_sim::seeded::prng::{Draws, Prng};
        use leasehold_sim::seeded::ratio::Ratio;

        #[test]
        fn swarm_draws_differ_by_seed_and_stay_within_the_base_plan() {
            let base = FaultPlan::default();
            let draw =
                |seed| FaultPlan::swarm(&base, &mut Prng::named(seed, "swarm", Draws::Uniform));
            assert_eq!(draw(3), draw(3));
            let plans: Vec<_> = (0..20).map(draw).collect();
            assert!(plans.iter().any(|p| p != &plans[0]));
            // Each fault is on in some seeds and off in others.
            for fault in Fault::ALL {
                assert!(plans.iter().any(|p| p.ratio(fault).is_zero()), "{fault:?}");
                assert!(plans.iter().any(|p| !p.ratio(fault).is_zero()), "{fault:?}");
            }
            let mut narrow = FaultPlan::none();
            narrow.crash = Ratio::new(1, 10);
            for seed in 0..20 {
                let plan =
                    FaultPlan::swarm(&narrow, &mut Prng::named(seed, "swarm", Draws::Uniform));
                assert!(plan.enabled().iter().all(|&f| f == Fault::Crash));
            }
        }

        #[test]
        fn a_plan_round_trips_through_toml() {
            let plan = FaultPlan::swarm(
                &FaultPlan::default(),
                &mut Prng::named(9, "swarm", Draws::Uniform),
            );
            let text = toml::to_string(&plan).unwrap();
            assert!(text.contains("crash = \""), "{text}");
            assert_eq!(toml::from_str::<FaultPlan>(&text).unwrap(), plan);
            assert_eq!(FaultPlan::none().summary(), "none");
        }
    }

    /// ChaCha8's keystream, word for word rand_chacha's, on every path.
    mod keystream {
        #[cfg(target_arch = "x86_64")]
        use leasehold_sim::seeded::keystream::x86;
        use leasehold_sim::seeded::keystream::{blocks_rand, Blocks, Keystream, WORDS};
        use rand::{RngCore, SeedableRng};
        use rand_chacha::ChaCha8Rng;

        /// Word `k` of a refill.
        fn word_of(blocks: &Blocks, k: usize) -> u32 {
            (blocks[k / 2] >> (32 * (k % 2))) as u32
        }

        /// Every word of the first 4,096 blocks (256 refills) is rand_chacha's, for several keys
        /// and streams, on every path this machine has.
        #[test]
        fn words_are_rand_chachas() {
            for (seed, stream) in [
                (0, 0),
                (1, 7),
                (42, u64::MAX),
                (9_999, 0x1234_5678_9abc_def0),
            ] {
                let mut theirs = ChaCha8Rng::seed_from_u64(seed);
                theirs.set_stream(stream);
                let ours = Keystream::new(theirs.get_seed(), stream);
                let mut paths: Vec<Keystream> = vec![ours.clone(), ours.clone(), ours];
                let mut blocks = [0; WORDS / 2];
                for refill in 0..256 {
                    let expected: Vec<u32> = (0..WORDS).map(|_| theirs.next_u32()).collect();
                    for (path, stream) in paths.iter_mut().enumerate() {
                        match path {
                            0 => stream.refill(&mut blocks),
                            #[cfg(target_arch = "x86_64")]
                            1 if std::is_x86_feature_detected!("avx2") => {
                                // SAFETY: the processor has AVX2, checked just above.
                                unsafe { x86::blocks_avx2(stream, &mut blocks) };
                                stream.advance();
                            }
                            1 => stream.refill(&mut blocks),
                            _ => {
                                blocks_rand(stream, &mut blocks);
                                stream.advance();
                            }
                        }
                        for (k, &word) in expected.iter().enumerate() {
                            assert_eq!(
                                word_of(&blocks, k),
                                word,
                                "seed {seed}, stream {stream:?}, refill {refill}, word {k}, path {path}"
                            );
                        }
                    }
                }
            }
        }

        /// The block counter's high word: blocks 2^32 - 8 .. 2^32 + 8 straddle it.
        #[test]
        fn the_counter_carries_into_its_high_word() {
            let mut theirs = ChaCha8Rng::seed_from_u64(5);
            theirs.set_stream(3);
            theirs.set_word_pos(((1u128 << 32) - 8) * 16);
            let mut ours = Keystream::new(theirs.get_seed(), 3);
            ours.block = (1 << 32) - 8;
            let mut blocks = [0; WORDS / 2];
            ours.refill(&mut blocks);
            for k in 0..WORDS {
                assert_eq!(word_of(&blocks, k), theirs.next_u32(), "word {k}");
            }
        }
    }

    /// The named generators and their draws, in step with rand's.
    mod prng {
        use leasehold_sim::seeded::prng::{Draws, Odds, Prng, Span};
        use leasehold_sim::seeded::ratio::Ratio;
        use leasehold_sim::trace::fnv1a64;
        use rand::SeedableRng;
        use rand_chacha::ChaCha8Rng;

        #[test]
        fn named_generators_are_reproducible_and_independent() {
            let draws = |seed, name| {
                let mut prng = Prng::named(seed, name, Draws::Uniform);
                (0..8).map(|_| prng.below(1000)).collect::<Vec<_>>()
            };
            assert_eq!(draws(7, "network"), draws(7, "network"));
            assert_ne!(draws(7, "network"), draws(7, "faults"));
            assert_ne!(draws(7, "network"), draws(8, "network"));
            // Drawing more from one component leaves another's sequence as it was.
            let mut faults = Prng::named(7, "faults", Draws::Uniform);
            for _ in 0..100 {
                faults.below(10);
            }
            assert_eq!(draws(7, "network"), draws(7, "network"));
        }

        /// Ranges over small, odd, power-of-two, huge (often rejected) and full ranges.
        const SPANS: [(u64, u64); 12] = [
            (0, 0),
            (0, 1),
            (1, 3),
            (0, 99),
            (5, 5 + 1023),
            (0, 6_000),
            (30_000, 90_000),
            (0, (1 << 63) + 7),
            (3, u64::MAX - 2),
            (0, u64::MAX / 3 * 2),
            (1, u64::MAX),
            (0, u64::MAX),
        ];

        /// Draws of `Prng` drawing as `draws` and of rand on the same ChaCha8 stream, where
        /// `theirs` draws in `lo..=hi` as rand does: the same numbers, word for word, over
        /// [`SPANS`], ranges `0..n`, a chance, prepared odds and a coin.
        fn in_step_with_rand(draws: Draws, theirs: impl Fn(&mut ChaCha8Rng, u64, u64) -> u64) {
            for seed in [0, 1, 42, 9_999] {
                let mut ours = Prng::named(seed, "network", draws);
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(fnv1a64(b"network"));
                for round in 0..300 {
                    for &(lo, hi) in &SPANS {
                        let b = theirs(&mut rng, lo, hi);
                        assert_eq!(
                            ours.between(lo, hi),
                            b,
                            "seed {seed}, round {round}, {lo}..={hi}"
                        );
                        if hi < u64::MAX {
                            let n = hi + 1;
                            let b = theirs(&mut rng, 0, hi);
                            assert_eq!(ours.below(n), b, "seed {seed}, round {round}, 0..{n}");
                        }
                    }
                    let ratio = Ratio::new(3, 100);
                    assert_eq!(ours.chance(ratio), theirs(&mut rng, 0, 99) < 3);
                    let odds = Odds::of(ratio, draws);
                    assert_eq!(ours.odds(&odds), theirs(&mut rng, 0, 99) < 3);
                    assert_eq!(ours.coin(), theirs(&mut rng, 0, 1) == 1);
                }
            }
        }

        /// `gen_range` draws are rand's `Rng::gen_range` on the same ChaCha8 stream.
        #[test]
        fn gen_range_draws_are_rands_gen_range_on_the_same_stream() {
            use rand::Rng;
            in_step_with_rand(Draws::GenRange, |rng, lo, hi| rng.gen_range(lo..=hi));
        }

        /// `uniform` draws are rand's `Uniform` distribution on the same ChaCha8 stream.
        #[test]
        fn uniform_draws_are_rands_uniform_on_the_same_stream() {
            use rand::distributions::{Distribution, Uniform};
            in_step_with_rand(Draws::Uniform, |rng, lo, hi| {
                Uniform::new_inclusive(lo, hi).sample(rng)
            });
        }

        /// `uniform` rejects almost no draw: over the default fault plan's denominators it reads
        /// one draw per decision, where `gen_range` reads about a third more.
        #[test]
        fn uniform_reads_fewer_words_than_gen_range() {
            let draws_read = |draws| {
                let mut prng = Prng::named(3, "faults", draws);
                let odds = [20u32, 25, 50, 100].map(|den| Odds::of(Ratio::new(1, den), draws));
                for _ in 0..1_000 {
                    for o in &odds {
                        prng.odds(o);
                    }
                }
                prng.draws_read()
            };
            let uniform = draws_read(Draws::Uniform);
            let gen_range = draws_read(Draws::GenRange);
            assert_eq!(uniform, 4_000, "uniform rejected a draw");
            // gen_range accepts 20/32, 25/32, 50/64 and 100/128 of the draws: about 5,440 read.
            assert!(gen_range > 5_000, "gen_range read {gen_range} draws");
        }

        #[test]
        fn draws_are_named_both_ways() {
            for draws in Draws::ALL {
                assert_eq!(Draws::from_name(draws.name()), Some(draws));
            }
            assert_eq!(Draws::from_name("gen-range"), None);
        }

        #[test]
        fn chance_respects_its_extremes_and_rate() {
            let mut prng = Prng::named(1, "t", Draws::Uniform);
            assert!((0..100).all(|_| !prng.chance(Ratio::ZERO)));
            assert!((0..100).all(|_| prng.chance(Ratio::ONE)));
            let hits = (0..10_000)
                .filter(|_| prng.chance(Ratio::new(1, 4)))
                .count();
            assert!((2_200..2_800).contains(&hits), "{hits}");
        }

        /// Odds decide as the chance of their ratio, draw for draw: both generators stay in step
        /// over extreme, tiny, even and odd ratios.
        #[test]
        fn odds_draw_as_chance_does() {
            let ratios = [
                Ratio::ZERO,
                Ratio::ONE,
                Ratio::new(1, 2),
                Ratio::new(1, 3),
                Ratio::new(3, 100),
                Ratio::new(7, 7),
                Ratio::new(0, 9),
                Ratio::new(1, 1 << 31),
                Ratio::new(u32::MAX - 1, u32::MAX),
            ];
            for seed in 0..20 {
                for draws in Draws::ALL {
                    let mut a = Prng::named(seed, "faults", draws);
                    let mut b = Prng::named(seed, "faults", draws);
                    for round in 0..500 {
                        for ratio in ratios {
                            assert_eq!(
                                a.chance(ratio),
                                b.odds(&Odds::of(ratio, draws)),
                                "seed {seed}, round {round}, {ratio}, {draws}"
                            );
                        }
                    }
                    assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
                }
            }
        }

        /// Spans draw as `between` of their bounds, draw for draw (rejections included).
        #[test]
        fn spans_draw_as_between_does() {
            let bounds: [(u64, u64); 8] = [
                (0, 0),
                (1, 1),
                (0, 6_000),
                (1, 6_000),
                (15_000, 90_000),
                (0, (1 << 63) + 7),
                (3, u64::MAX - 2),
                (0, u64::MAX),
            ];
            for seed in 0..20 {
                for draws in Draws::ALL {
                    let mut a = Prng::named(seed, "network", draws);
                    let mut b = Prng::named(seed, "network", draws);
                    for round in 0..500 {
                        for (low, high) in bounds {
                            assert_eq!(
                                a.between(low, high),
                                b.span(&Span::new(low, high, draws)),
                                "seed {seed}, round {round}, {low}..={high}, {draws}"
                            );
                        }
                    }
                    assert_eq!(a.below(1 << 40), b.below(1 << 40), "still in step");
                }
            }
        }
    }

    /// Probabilities as integer fractions.
    mod ratio {
        use leasehold_sim::seeded::ratio::Ratio;

        #[test]
        fn parses_and_prints_the_same_text() {
            for text in ["3/100", "0/1", "1/1", "7/8"] {
                assert_eq!(text.parse::<Ratio>().unwrap().to_string(), text);
            }
            assert_eq!("0".parse::<Ratio>().unwrap(), Ratio::ZERO);
            assert_eq!(" 1 / 2 ".parse::<Ratio>().unwrap(), Ratio::new(1, 2));
        }

        #[test]
        fn rejects_what_is_not_a_probability() {
            for text in ["", "1/0", "3/2", "0.5", "-1/2", "a/b", "1/2/3"] {
                assert!(text.parse::<Ratio>().is_err(), "{text}");
            }
        }
    }

    /// A seeded run's setup, its validation and the bounds derived from it.
    mod setup {
        use leasehold_model::Variant;
        use leasehold_sim::seeded::ratio::Ratio;
        use leasehold_sim::seeded::setup::Setup;

        #[test]
        fn the_default_setup_is_valid_and_keeps_the_historical_bounds() {
            let setup = Setup::default_for(Variant::Fenced);
            assert_eq!(setup.validate(), Ok(()));
            assert_eq!(setup.workload.safety_ms_max, 60 * 30_000);
            assert_eq!(setup.workload.steps_max, 1_000_000);
        }

        #[test]
        fn a_huge_lease_is_refused_naming_the_field_and_its_flag() {
            let mut setup = Setup::default_for(Variant::Fenced);
            setup.lease_ms = 400_000_000_000_000_000;
            let error = setup.validate().unwrap_err();
            assert_eq!(error.field(), "config.lease_ms");
            assert_eq!(error.flag().as_deref(), Some("--lease-ms"));
            assert!(!error.to_string().contains('\n'));
        }

        #[test]
        fn bounds_scale_with_the_workload() {
            let mut setup = Setup::default_for(Variant::Fenced);
            setup.resize(1_000_000, 2, 3);
            setup.derive_bounds(true, true);
            assert_eq!(setup.validate(), Ok(()));
            assert!(setup.workload.safety_ms_max > 600_000 * setup.lease_ms);
            assert!(setup.workload.steps_max >= 20 * 2_000_000);
            assert_eq!(setup.worker_names, ["A", "B", "C"]);
            setup.resize(5, 4, 30);
            assert_eq!(setup.group_names[3], "g3");
            assert_eq!(setup.worker_names[27], "W27");
            assert_eq!(setup.clock_offset_ms.len(), 30);
        }

        /// The default workload publishes up to as many events again during the run: the records
        /// a run may hold, and every bound derived from them, count those too.
        #[test]
        fn records_count_the_events_published_during_the_run() {
            let mut setup = Setup::default_for(Variant::Fenced);
            setup.resize(10_000, 2, 3);
            assert!(!setup.workload.publish.is_zero());
            assert_eq!(setup.events_max(), 20_000);
            assert_eq!(setup.records(), 40_000);
            setup.derive_bounds(true, true);
            let (safety, steps) = (setup.workload.safety_ms_max, setup.workload.steps_max);
            assert_eq!(steps, 40_000 * 3 * 20);
            // 40,000 records over 3 workers, two leases each.
            assert_eq!(safety, 26_668 * setup.lease_ms);
            setup.workload.publish = Ratio::zero();
            assert_eq!(setup.records(), 20_000);
            setup.derive_bounds(true, true);
            assert!(setup.workload.safety_ms_max < safety);
            // The largest run refused names the events published during the run.
            let mut huge = Setup::default_for(Variant::Fenced);
            huge.resize(1 << 27, 2, 3);
            let error = huge.validate().unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains("as many again published during the run"),
                "{error}"
            );
        }
    }

    /// The shrinker's account of the changes it kept.
    mod shrink {
        use leasehold_sim::seeded::shrink::note_change;

        #[test]
        fn successive_cuts_of_one_quantity_read_as_one_change() {
            let mut changes = Vec::new();
            for change in [
                "events 2000 → 500",
                "events 500 → 125",
                "events 125 → 124",
                "groups 2 → 1",
                "fault drop off",
                "fault delay off",
                "events 124 → 24",
                "safety_ms_max 4000 → 1000",
                "safety_ms_max 1000 → 500",
                "workers 3 → 2",
                "workers 3 → 1",
            ] {
                note_change(&mut changes, change.to_string());
            }
            assert_eq!(
                changes,
                [
                    "events 2000 → 124",
                    "groups 2 → 1",
                    "fault drop off",
                    "fault delay off",
                    "events 124 → 24",
                    "safety_ms_max 4000 → 500",
                    "workers 3 → 2",
                    // Not the cut the last one ended at: told as it is.
                    "workers 3 → 1",
                ]
            );
        }
    }

    /// A campaign's summary: its printed speed and merging.
    mod summary {
        use leasehold_sim::seeded::campaign::Campaign;
        use leasehold_sim::seeded::setup::Setup;
        use leasehold_sim::seeded::summary::{Summary, SPEED_WALL_MS_MIN};

        /// A campaign over a few milliseconds of wall time prints no rate (its clock counts whole
        /// milliseconds); over more, the steps per second of its steps and wall time.
        #[test]
        fn a_speed_is_printed_only_over_enough_wall_time() {
            let template = Setup::default_for(leasehold_model::Variant::Fenced);
            let campaign = Campaign::new(template, 0..1);
            let summary = Summary {
                seeds_run: 4,
                steps: 6_000,
                ..Summary::default()
            };
            let speed = |wall_ms| {
                let text = campaign
                    .report(summary.clone(), wall_ms, Vec::new())
                    .to_string();
                let line = text.lines().find(|l| l.starts_with("speed: "));
                line.expect("a speed line").to_string()
            };
            assert!(speed(SPEED_WALL_MS_MIN - 1).starts_with("speed: not measured"));
            assert!(speed(3_000).starts_with("speed: 2000 steps/s"));
        }

        /// Parts that add up past 2^64 are refused, naming the count, and leave the sum as it was.
        #[test]
        fn a_merge_past_u64_max_is_refused_and_changes_nothing() {
            let mut sum = Summary {
                seeds_run: 3,
                steps: 10,
                ..Summary::default()
            };
            let before = sum.clone();
            let huge = Summary {
                seeds_run: 1,
                steps: u64::MAX,
                ..Summary::default()
            };
            assert_eq!(sum.try_merge(&huge), Err("steps"));
            assert_eq!(sum, before);
            let fine = Summary {
                seeds_run: 2,
                steps: 5,
                ..Summary::default()
            };
            assert_eq!(sum.try_merge(&fine), Ok(()));
            assert_eq!((sum.seeds_run, sum.steps), (5, 15));
        }
    }
}

/// The SVG timeline's ticks.
mod svg {
    use leasehold_sim::svg::tick_step;

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(tick_step(33_000), 5_000);
        assert_eq!(tick_step(8), 1);
        assert_eq!(tick_step(1_600), 200);
    }
}

/// The trace's FNV-1a hash.
mod trace {
    use leasehold_sim::trace::{fnv1a64, fnv1a64_extend, FNV1A64_OFFSET};

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        // From the FNV reference test suite (draft-eastlake-fnv).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
        let pieces = fnv1a64_extend(fnv1a64_extend(FNV1A64_OFFSET, b"foo"), b"bar");
        assert_eq!(pieces, 0x85944171f73967e8);
    }
}

/// The simulated world's write counts.
mod world {
    use leasehold_sim::world::World;

    #[test]
    fn counts_duplicates_and_ghost_writes() {
        let mut world = World::new(2);
        world.publish(3);
        world.write(0, 3, true);
        world.write(1, 3, true);
        assert_eq!(world.duplicates(), 0);
        world.write(0, 3, false);
        assert!(world.written(0, 3));
        assert!(!world.written(0, 1));
        assert_eq!(world.duplicates(), 1);
        assert_eq!(world.ghost_writes(), 1);
        world.write(1, 200, true);
        assert!(world.written(1, 200));
    }
}
