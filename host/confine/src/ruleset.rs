//! Building the Landlock ruleset in the gateway, before the fork.
//!
//! Everything that allocates or opens paths happens here: the ruleset is created, every
//! rule added (each path opened as an `O_PATH` descriptor, handed to the kernel, closed),
//! and only the ruleset's descriptor crosses the fork, where `restrict_self` enforces it.
//!
//! Compatibility follows the `landlock` crate's model. The access rights of the policy's
//! `min_landlock_abi` are added as a hard requirement under [`Enforcement::Required`], so
//! a kernel without them fails here, before anything is spawned, with an error naming the
//! mechanism. Rights of newer ABIs (up to [`HANDLED_FS`]) are added best effort: enforced
//! where the kernel has them, silently absent where it does not.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError, Scope,
};

use crate::policy::{Confinement, Enforcement, Network};
use crate::report::{ConfinementError, Mechanism};

/// The newest filesystem rights the ruleset handles (ABI 9 adds connecting to Unix
/// sockets by path). Network rights stop at TCP: ABI 10's UDP rules would also cut DNS,
/// which a provider granted TCP ports usually needs.
pub(crate) const HANDLED_FS: ABI = ABI::V9;
const HANDLED_NET: ABI = ABI::V4;
const HANDLED_SCOPE: ABI = ABI::V6;

/// Creates the ruleset for `confinement`; `program` and `workdir` are granted too.
pub(crate) fn build(
    confinement: &Confinement,
    program: &Path,
    workdir: &Path,
) -> Result<RulesetCreated, ConfinementError> {
    let required = confinement.enforcement == Enforcement::Required;
    let min = confinement.min_landlock_abi;
    let restrict_tcp = confinement.network != Network::Unrestricted;
    let hard = if required { CompatLevel::HardRequirement } else { CompatLevel::BestEffort };

    let mut ruleset = Ruleset::default()
        .set_compatibility(hard)
        .handle_access(AccessFs::from_all(min))
        .map_err(unavailable(Mechanism::LandlockFilesystem))?;
    if restrict_tcp && !AccessNet::from_all(min).is_empty() {
        ruleset = ruleset.handle_access(AccessNet::from_all(min)).map_err(unavailable(Mechanism::LandlockNetwork))?;
    }
    if !Scope::from_all(min).is_empty() {
        ruleset = ruleset.scope(Scope::from_all(min)).map_err(unavailable(Mechanism::LandlockScopes))?;
    }
    ruleset = ruleset.set_compatibility(CompatLevel::BestEffort);
    ruleset = ruleset.handle_access(AccessFs::from_all(HANDLED_FS)).map_err(setup)?;
    if restrict_tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(HANDLED_NET)).map_err(setup)?;
    }
    ruleset = ruleset.scope(Scope::from_all(HANDLED_SCOPE)).map_err(setup)?;
    let mut created = ruleset
        .set_compatibility(hard)
        .create()
        .map_err(unavailable(Mechanism::LandlockFilesystem))?
        .set_compatibility(CompatLevel::BestEffort);

    let read_exec = AccessFs::from_read(HANDLED_FS);
    let read_only = AccessFs::ReadFile | AccessFs::ReadDir;
    // Everything but device nodes: with one for the disk, a server that kept CAP_MKNOD
    // (root, without a user namespace) would read and write the whole file system.
    let read_write = AccessFs::from_all(HANDLED_FS) & !(AccessFs::MakeBlock | AccessFs::MakeChar);
    created = add_paths(created, std::slice::from_ref(&program.to_path_buf()), read_exec)?;
    created = add_paths(created, &confinement.read_exec, read_exec)?;
    created = add_paths(created, &confinement.read_only, read_only)?;
    created = add_paths(created, &confinement.read_write, read_write)?;
    created = add_paths(created, std::slice::from_ref(&workdir.to_path_buf()), read_write)?;

    let (connect, bind) = match &confinement.network {
        Network::Tcp { connect, bind } => (connect.clone(), bind.clone()),
        // The listener is bound before Landlock applies, so only the connect is granted.
        Network::Proxied { port, transparent, .. } => {
            (std::iter::once(*port).chain(transparent.iter().copied()).collect(), Vec::new())
        }
        Network::None | Network::Unrestricted => (Vec::new(), Vec::new()),
    };
    for port in connect {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(setup)?;
    }
    for port in bind {
        created = created.add_rule(NetPort::new(port, AccessNet::BindTcp)).map_err(setup)?;
    }
    Ok(created)
}

/// Every path [`build`] grants, whatever the rights: the program, the policy's paths and
/// the working directory.
pub(crate) fn granted<'a>(
    confinement: &'a Confinement,
    program: &'a Path,
    workdir: &'a Path,
) -> impl Iterator<Item = &'a Path> {
    let listed = confinement.read_exec.iter().chain(&confinement.read_only).chain(&confinement.read_write);
    [program, workdir].into_iter().chain(listed.map(PathBuf::as_path))
}

/// Adds one rule per path. A file gets only the rights that apply to files.
fn add_paths(
    mut ruleset: RulesetCreated,
    paths: &[PathBuf],
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, ConfinementError> {
    for path in paths {
        let problem = |detail: String| ConfinementError::Path { path: path.display().to_string(), detail };
        let metadata = path.metadata().map_err(|e| problem(e.to_string()))?;
        let access = if metadata.is_dir() { access } else { access & AccessFs::from_file(HANDLED_FS) };
        let fd = PathFd::new(path).map_err(|e| problem(e.to_string()))?;
        ruleset = ruleset.add_rule(PathBeneath::new(fd, access)).map_err(|e| problem(e.to_string()))?;
    }
    Ok(ruleset)
}

fn unavailable(mechanism: Mechanism) -> impl Fn(RulesetError) -> ConfinementError {
    move |e| ConfinementError::Unavailable { mechanism, detail: e.to_string() }
}

fn setup(e: RulesetError) -> ConfinementError {
    ConfinementError::Setup(e.to_string())
}
