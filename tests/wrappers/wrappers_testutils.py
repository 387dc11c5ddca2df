"""What the wrapper tests share: the MuJoCo environments the NonStationary wrapper covers
(NS-Gym's ten MuJoCo v5 environments, Walker2d-v5 and bam-rl's cart-pole)."""

MUJOCO = (
    "Ant-v5",
    "HalfCheetah-v5",
    "Hopper-v5",
    "Humanoid-v5",
    "HumanoidStandup-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
    "Swimmer-v5",
    "Pusher-v5",
    "Walker2d-v5",
    "bam_rl/GravityCartPole-v0",
)
