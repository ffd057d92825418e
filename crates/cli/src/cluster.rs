//! The API server the live commands (`record`, `watch`, `wait`, `check`) talk to.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rf_recorder::SourceInfo;

/// A client from `--kubeconfig`/`--context` (or the usual inference), the source for the
/// header, and the context's default namespace.
pub async fn client_for(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> Result<(kube::Client, SourceInfo, String)> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        cluster: None,
        user: None,
    };
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("cannot use kubeconfig {}", path.display()))?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("cannot use the kubeconfig context")?,
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let default = home.map(|h| h.join(".kube").join("config"));
            let from_env = std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty());
            let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
            if !from_env && !in_cluster && default.as_ref().is_none_or(|d| !d.exists()) {
                bail!(
                    "no kubeconfig found: KUBECONFIG is not set, {} does not exist, and this is not a pod in a cluster; set KUBECONFIG, pass --kubeconfig PATH, or run inside a cluster",
                    default
                        .map_or_else(|| "~/.kube/config".to_owned(), |d| d.display().to_string())
                );
            }
            kube::Config::infer().await.context(
                "no usable kubeconfig: set KUBECONFIG, pass --kubeconfig PATH, or run inside a cluster",
            )?
        }
    };
    let server = config.cluster_url.to_string();
    let namespace = config.default_namespace.clone();
    let client =
        kube::Client::try_from(config).context("cannot build a client from the kubeconfig")?;
    let source = SourceInfo {
        context: context.map(str::to_owned),
        server: Some(server.trim_end_matches('/').to_owned()),
    };
    Ok((client, source, namespace))
}
