//! The registry of rules: one line per rule, the only list of them.
//!
//! A line names the rule's [`Rule`](crate::Rule) variant, its id (stable once released: reports,
//! `--fail-on` output and fixtures carry it), its severity, and its detector's module under
//! `detectors/`. That module holds everything else: the detector (a `detector(snapshot)`
//! constructor) and its documentation, whose first line is `` `id` (severity): what it finds. ``
//! followed by the headings `What it detects`, `Why it matters` and `Example` (and `Evidence`,
//! `Remedy` where there is more to say). `rollout-forensics rules` prints that documentation,
//! and docs/rules.md is generated from it.
//!
//! [`registry!`] hands the list to a macro that expands it: `finding.rs` makes the `Rule` enum
//! of it, `detectors/mod.rs` the detector modules, their constructors and their documentation.

/// Calls `$expand! { Variant, "id", Severity, module; ... }` with every rule, in the order they
/// are documented.
macro_rules! registry {
    ($expand:ident) => {
        $expand! {
            RerenderRestart, "rerender-restart", Error, rerender_restart;
            PauseLost, "pause-lost", Error, pause_lost;
            ConfigOnlyRerender, "config-only-rerender", Warning, config_only_rerender;
            HashOnlyChange, "hash-only-change", Warning, hash_only_change;
            OrphanedReplicaSet, "orphaned-replicaset", Error, orphaned_replicaset;
            ManualStepJump, "manual-step-jump", Warning, manual_step_jump;
            RestartChurn, "restart-churn", Warning, restart_churn;
            ServiceSelectorMismatch, "service-selector-mismatch", Error, service_selector_mismatch;
            CanaryNotInEndpoints, "canary-not-in-endpoints", Error, canary_not_in_endpoints;
            NoReadyEndpoints, "no-ready-endpoints", Error, no_ready_endpoints;
            GitopsHealthMismatch, "gitops-health-mismatch", Warning, gitops_health_mismatch;
            DoubleRender, "double-render", Warning, double_render;
            ImageNotPinned, "image-not-pinned", Warning, image_not_pinned;
            ImageDigestDrift, "image-digest-drift", Error, image_digest_drift;
            NoRollbackHistory, "no-rollback-history", Warning, no_rollback_history;
            DeploymentNotScaledDown, "deployment-not-scaled-down", Warning, deployment_not_scaled_down;
            TrafficWeightMismatch, "traffic-weight-mismatch", Error, traffic_weight_mismatch;
            FrontDoorBypass, "front-door-bypass", Error, front_door_bypass;
            StaleRoleLabels, "stale-role-labels", Warning, stale_role_labels;
            SelectorFight, "selector-fight", Warning, selector_fight;
            AnalysisWithoutTraffic, "analysis-without-traffic", Error, analysis_without_traffic;
            AnalysisFailed, "analysis-failed", Warning, analysis_failed;
            RolloutStopped, "rollout-stopped", Error, rollout_stopped;
        }
    };
}
pub(crate) use registry;
