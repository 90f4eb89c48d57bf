//! A gateway that is one replica of several behind a load balancer (`[cluster]`):
//! [`Member`] joins the shared store, keys request states with the shared secret,
//! checks the audit log against the anchor the store holds for this replica, and keeps
//! anchoring the log's last durable record while the gateway runs.
//!
//! A replica never falls back to deciding alone: while the store cannot be reached,
//! what needs it (budgets, redeeming request states) is refused, and `/readyz` says
//! why ([`Member::unready`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmgate_audit::{AuditLog, ChainKey};
use wasmgate_store::{Anchored, Store};

use crate::config::ClusterConfig;
use crate::error::StartError;

/// The purpose the request-state key is derived for, from the shared secret.
const APPROVAL_KEY_PURPOSE: &str = "wasmgate request-state key v1";
/// What the key of the data-flow memory's hashes is derived for, from the same secret.
const FLOW_KEY_PURPOSE: &str = "wasmgate flow-memory key v1";
/// What the key signing review decisions, asks and answers in the store is derived for.
const REVIEW_KEY_PURPOSE: &str = "wasmgate review key v1";

/// This gateway's part in a cluster; see the module docs.
#[derive(Debug)]
pub struct Member {
    /// How it was configured.
    pub config: ClusterConfig,
    /// The store every replica shares.
    pub store: Arc<Store>,
    approval_key: [u8; 32],
    /// The key of the data-flow memory's hashes, the same on every replica.
    flow_key: [u8; 16],
    /// The key signing review decisions, asks and answers in the store.
    pub(crate) review_key: [u8; 32],
    /// Why the last anchor was refused, until one is kept.
    anchoring: Mutex<Option<String>>,
}

impl Member {
    /// The data-flow memory every replica shares through the store.
    #[must_use]
    pub fn provenance(&self) -> wasmgate_guard::Provenance {
        let store = Arc::clone(&self.store) as Arc<dyn wasmgate_core::SharedMemory>;
        wasmgate_guard::Provenance::shared(wasmgate_guard::ProvenanceLimits::default(), self.flow_key, store)
    }

    /// Joins the cluster `config` describes: the store must answer and the key file must
    /// be usable.
    ///
    /// # Errors
    ///
    /// [`StartError::Cluster`] naming what is wrong and what to do.
    pub async fn join(config: &ClusterConfig) -> Result<Self, StartError> {
        let url = match (&config.store, &config.store_env) {
            (Some(url), _) => url.clone(),
            (None, Some(var)) => std::env::var(var).map_err(|_| {
                StartError::cluster(format!("[cluster] store_env {var}: the variable is not set"), None)
            })?,
            (None, None) => return Err(StartError::cluster("[cluster] names no store", None)),
        };
        let timeout = Duration::from_millis(config.store_timeout_ms);
        let store = Store::new(&url, timeout).map_err(|e| StartError::cluster("[cluster] store", Some(e.into())))?;
        store.ping().await.map_err(|e| {
            let what = "the shared store does not answer, and a replica does not start without it (start it, or fix \
                        the URL)";
            StartError::cluster(what, Some(e.into()))
        })?;
        let secret = ChainKey::load(&config.approval_key_file)
            .map_err(|e| StartError::cluster("[cluster] approval_key_file", Some(e.into())))?;
        Ok(Self {
            config: config.clone(),
            store: Arc::new(store),
            approval_key: secret.derive(APPROVAL_KEY_PURPOSE),
            flow_key: {
                let derived = secret.derive(FLOW_KEY_PURPOSE);
                let mut key = [0u8; 16];
                key.copy_from_slice(&derived[..16]);
                key
            },
            review_key: secret.derive(REVIEW_KEY_PURPOSE),
            anchoring: Mutex::new(None),
        })
    }

    /// The asks waiting for reviewers, as every replica shares them, signed.
    #[must_use]
    pub fn asks(&self) -> Arc<dyn wasmgate_core::SharedAsks> {
        Arc::new(crate::replicas::SignedAsks { store: Arc::clone(&self.store), key: self.review_key })
    }

    /// Publishes a review decision this replica took, for the others to follow; a store
    /// that cannot be reached is logged (the decision holds here).
    pub(crate) async fn publish_decision(&self, decision: &crate::review::Decision, reviewer: &str) {
        let shared = crate::replicas::SharedDecision {
            replica: self.replica().to_owned(),
            reviewer: reviewer.to_owned(),
            decision: decision.clone(),
        };
        let Ok(text) = serde_json::to_string(&shared) else { return };
        if let Err(error) = self.store.publish_decision(&crate::replicas::sign(&self.review_key, &text)).await {
            tracing::warn!(%error, "the review decision is not in the shared store: the other replicas do not follow it");
        }
    }

    /// This replica's name.
    #[must_use]
    pub fn replica(&self) -> &str {
        &self.config.replica
    }

    /// Checks `audit` against the anchor the store holds for this replica (the log reaches
    /// it and holds that very record), and anchors its last record.
    ///
    /// # Errors
    ///
    /// [`StartError::AuditBehind`] when the log ends before the anchored record,
    /// [`StartError::AuditRewritten`] when it holds another record there,
    /// [`StartError::Cluster`] when the store does not answer.
    pub async fn check(&self, audit: &AuditLog) -> Result<(), StartError> {
        let head = audit.durable_head();
        let path = audit.path().to_owned();
        let behind = |stored: u64| StartError::AuditBehind {
            path: path.clone(),
            replica: self.replica().to_owned(),
            log: head.seq,
            stored,
        };
        let unreachable = |e: wasmgate_store::StoreError| StartError::cluster("the shared store", Some(e.into()));
        if let Some(stored) = self.store.anchor_of(self.replica()).await.map_err(unreachable)? {
            if stored.seq > head.seq {
                return Err(behind(stored.seq));
            }
            let (log, anchor) = (path.clone(), stored.clone());
            let held = tokio::task::spawn_blocking(move || wasmgate_audit::holds(&log, &anchor))
                .await
                .map_err(|e| StartError::cluster("checking the audit log stopped", Some(e.into())))?
                .map_err(|e| StartError::cluster(format!("cannot read {}", path.display()), Some(e.into())))?;
            if !held {
                let replica = self.replica().to_owned();
                return Err(StartError::AuditRewritten { path, replica, seq: stored.seq });
            }
        }
        match self.store.anchor(self.replica(), &head).await.map_err(unreachable)? {
            Anchored::Kept => Ok(()),
            Anchored::Behind(stored) => Err(behind(stored.seq)),
        }
    }

    /// Anchors `audit`'s last durable record every `anchor_interval_ms`, until the task is
    /// aborted. The same anchor is sent again while nothing new is written: it keeps
    /// `/readyz` true to the store, and puts the anchor back into a store that came back
    /// without its data.
    #[must_use]
    pub fn anchoring(self: &Arc<Self>, audit: Arc<AuditLog>) -> Anchoring {
        let member = Arc::clone(self);
        let interval = Duration::from_millis(self.config.anchor_interval_ms);
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                member.anchor(&audit.durable_head()).await;
            }
        });
        Anchoring(task.abort_handle())
    }

    /// Anchors `head`, keeping why the store would not (for `/readyz`).
    async fn anchor(&self, head: &wasmgate_audit::Anchor) {
        let outcome = self.store.anchor(self.replica(), head).await;
        let mut anchoring = self.anchoring.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            Ok(Anchored::Kept) => *anchoring = None,
            Ok(Anchored::Behind(stored)) => {
                let why = format!(
                    "the shared store holds a later audit anchor for replica {} (seq {}) than this replica's log \
                     (seq {}): another gateway may be running under the same name",
                    self.replica(),
                    stored.seq,
                    head.seq
                );
                if anchoring.is_none() {
                    tracing::error!("{why}");
                }
                *anchoring = Some(why);
            }
            // The store keeps its own trouble for `/readyz`.
            Err(_) => {}
        }
    }

    /// Anchors the log's last record now (when the gateway stops, after its last calls).
    pub async fn anchor_now(&self, audit: &AuditLog) {
        self.anchor(&audit.durable_head()).await;
    }

    /// Why this replica should not take calls now, if anything.
    #[must_use]
    pub fn unready(&self) -> Vec<String> {
        let anchoring = self.anchoring.lock().unwrap_or_else(PoisonError::into_inner).clone();
        self.store.trouble().into_iter().chain(anchoring).collect()
    }

    /// What the MCP server shares with the other replicas.
    #[must_use]
    pub fn server(&self) -> wasmgate_server::Cluster {
        wasmgate_server::Cluster {
            replica: self.config.replica.clone(),
            approval_key: self.approval_key,
            store: Arc::clone(&self.store) as Arc<dyn wasmgate_core::SharedStore>,
            affinity: self.config.affinity,
        }
    }
}

/// The anchoring task; stopped when dropped.
#[derive(Debug)]
pub struct Anchoring(tokio::task::AbortHandle);

impl Drop for Anchoring {
    fn drop(&mut self) {
        self.0.abort();
    }
}
