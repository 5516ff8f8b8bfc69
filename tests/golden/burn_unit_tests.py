"""Numbers from Burn's own optimizer unit tests (tracel-ai/burn 2c06be35, 2026-08-21).

Each constant names the Rust test it comes from (`crates/burn-optim/src/optim/<file>.rs`).
Burn's `Linear` holds its weight as `[d_input, d_output]` and computes `x @ W + b`; its
`backward()` of a non-scalar output is the gradient of the sum.
`tests/optim/test_burn_unit_golden.py` rebuilds each test with burnish and compares with these
numbers, within Burn's tolerance or tighter.

Burn's optimizer tests with numbers, and where burnish runs them (test_burn_unit_golden.py
unless said):
    adam.rs     with_numbers (1e-2), with_amsgrad_50_steps (1e-5), no_nan
    adamw.rs    with_numbers (1e-2), with_numbers_cautious (1e-2), with_amsgrad_50_steps
                (1e-5), no_nan
    adagrad.rs  with_numbers (1e-6)
    rmsprop.rs  with_numbers_basic (1e-6), with_numbers (1e-6)
    adan.rs     with_numbers (1e-5), no_nan
    muon.rs     adjust_lr_fn_original / _match_rms_adamw, newton_schulz_orthogonalization,
                tall_matrix_transpose, zero_gradient, with_weight_decay, 1d_tensor_panics
    lbfgs.rs    cubic_interpolate, strong_wolfe_direct_comparison, lbfgs_(no_)strong_wolfe_
                comparison (1e-5)
Without numbers: sgd.rs (state, clipping, record) and the save/load and round-trip tests are
ported in test_burn_optimizer_api.py; sgd.rs `lora_finetune...` has no burnish counterpart
(no LoRA module).
"""

from __future__ import annotations

BURN_COMMIT = "2c06be351006851d42fdb6df16b976f4a82d9747"
LEARNING_RATE = 0.01

# The layer and the two inputs the Adam, AdamW and Adan tests share.
WEIGHT = [
    [-0.3206, 0.1374, 0.4043, 0.3200, 0.0859, 0.0671],
    [0.0777, -0.0185, -0.3667, 0.2550, 0.1955, -0.2922],
    [-0.0190, 0.0346, -0.2962, 0.2484, -0.2780, 0.3130],
    [-0.2980, -0.2214, -0.3715, -0.2981, -0.0761, 0.1626],
    [0.3300, -0.2182, 0.3717, -0.1729, 0.3796, -0.0304],
    [-0.0159, -0.0120, 0.1258, 0.1921, 0.0293, 0.3833],
]
BIAS = [-0.3905, 0.0884, -0.0970, 0.1176, 0.1366, 0.0130]
X_1 = [
    [0.6294, 0.0940, 0.8176, 0.8824, 0.5228, 0.4310],
    [0.7152, 0.9559, 0.7893, 0.5684, 0.5939, 0.8883],
]
X_2 = [
    [0.8491, 0.2108, 0.8939, 0.4433, 0.5527, 0.2528],
    [0.3270, 0.0412, 0.5538, 0.9605, 0.3195, 0.9085],
]
# adamw.rs `test_adamw_optimizer_with_numbers_cautious` flips the sign of one input.
X_2_CAUTIOUS = [
    [0.8491, 0.2108, 0.8939, 0.4433, 0.5527, 0.2528],
    [0.3270, 0.0412, 0.5538, 0.9605, 0.3195, -0.9085],
]

# adam.rs `test_adam_optimizer_with_amsgrad_50_steps`: epsilon 1e-8, L2 penalty 0.5, AMSGrad,
# input `ones([2, 6]) * 0.1 i` at step i = 1..50. Tolerance 1e-5.
ADAM_AMSGRAD_50 = {
    "weight": [
        [-0.9125810265541077, -0.45855265855789185, -0.1915993094444275,
         -0.2759990692138672, -0.5099529027938843, -0.5287043452262878],
        [-0.5181325674057007, -0.6139854788780212, -0.9574727416038513,
         -0.34102925658226013, -0.400514155626297, -0.8847861886024475],
        [-0.614483118057251, -0.5611032247543335, -0.8887064456939697,
         -0.34762972593307495, -0.8708556890487671, -0.2830044627189636],
        [-0.8904699683189392, -0.8151527643203735, -0.9621278643608093,
         -0.8905676603317261, -0.671261191368103, -0.4333854615688324],
        [-0.26599061489105225, -0.8119961023330688, -0.22424538433551788,
         -0.7672406435012817, -0.2163349837064743, -0.6258266568183899],
        [-0.611397922039032, -0.6075160503387451, -0.4701341986656189,
         -0.4039117991924286, -0.5663845539093018, -0.21262989938259125],
    ],
    "bias": [-0.8817203044891357, -0.4038999378681183, -0.5889149308204651,
             -0.37475723028182983, -0.3557940721511841, -0.47914788126945496],
}  # fmt: skip

# adamw.rs `test_adamw_optimizer_with_amsgrad_50_steps`: epsilon 1e-8, weight decay 0.5,
# AMSGrad, the same inputs. Tolerance 1e-5.
ADAMW_AMSGRAD_50 = {
    "weight": [
        [-0.7822558283805847, -0.42578864097595215, -0.21805696189403534,
         -0.28366872668266296, -0.46587175130844116, -0.4805040955543518],
        [-0.4722539782524109, -0.5471276640892029, -0.8181359767913818,
         -0.33425918221473694, -0.3805687427520752, -0.7601516842842102],
        [-0.5475167632102966, -0.5057991743087769, -0.763265073299408,
         -0.3393959403038025, -0.7490996718406677, -0.28911691904067993],
        [-0.7646660208702087, -0.7050473093986511, -0.8218720555305481,
         -0.7647438049316406, -0.5919585227966309, -0.40617525577545166],
        [-0.27588561177253723, -0.7025567889213562, -0.24343004822731018,
         -0.6672990918159485, -0.23728127777576447, -0.556389570236206],
        [-0.5451040267944336, -0.5420684814453125, -0.4348171353340149,
         -0.3832150399684906, -0.5099242925643921, -0.23440153896808624],
    ],
    "bias": [-0.7473056316375732, -0.3745720386505127, -0.5188710689544678,
             -0.35184532403945923, -0.33705732226371765, -0.4332566559314728],
}  # fmt: skip

# adamw.rs `test_adamw_optimizer_with_numbers_cautious`: epsilon 1e-8, weight decay 0.5,
# cautious, inputs X_1 then X_2_CAUTIOUS. Burn checks within 1e-2; its numbers have six
# decimals except the one element the cautious mask changes (the last of the last row).
ADAMW_CAUTIOUS = {
    "weight": [
        [-0.337295, 0.117827, 0.380358, 0.296868, 0.065232, 0.046534],
        [0.057032, -0.036518, -0.382951, 0.232516, 0.173738, -0.309182],
        [-0.038703, 0.016052, -0.313155, 0.225982, -0.295039, 0.289981],
        [-0.314920, -0.237394, -0.387704, -0.315067, -0.095153, 0.141081],
        [0.306815, -0.234226, 0.348083, -0.191115, 0.356002, -0.049993],
        [-0.035634, -0.030083, 0.104636, 0.170244, 0.009196, 0.37061332],
    ],
    "bias": [-0.406555, 0.067568, -0.115982, 0.096477, 0.115287, -0.007080],
}
# adamw.rs `test_adamw_optimizer_with_numbers`: the same without the cautious mask (X_2).
ADAMW_PLAIN_LAST = 0.359580

# adam.rs `test_adam_optimizer_with_numbers`: epsilon 1e-8, betas (0.9, 0.999), L2 penalty 0.5,
# inputs X_1 then X_2. Tolerance 1e-2 (Burn's; six decimals).
ADAM = {
    "weight": [
        [-0.340528, 0.118929, 0.384336, 0.300010, 0.066034, 0.047154],
        [0.057757, -0.036690, -0.386649, 0.235010, 0.175624, -0.312133],
        [-0.038940, 0.016306, -0.316151, 0.228410, -0.297819, 0.293047],
        [-0.317929, -0.239100, -0.391449, -0.318087, -0.095948, 0.142651],
        [0.310050, -0.235909, 0.351736, -0.192888, 0.359710, -0.050343],
        [-0.035840, -0.030203, 0.105840, 0.172110, 0.009440, 0.363346],
    ],
    "bias": [-0.410499, 0.068401, -0.116999, 0.097601, 0.116601, -0.006999],
}

# adagrad.rs `test_adagrad_optimizer_with_numbers`: epsilon 1e-8, lr_decay 0.5, inputs X_1
# then X_2. Tolerance 1e-6.
ADAGRAD = {
    "weight": [
        [-0.334989, 0.123011, 0.389911, 0.305611, 0.071511, 0.052711],
        [0.066144, -0.030056, -0.378256, 0.243444, 0.183944, -0.303756],
        [-0.033462, 0.020138, -0.310662, 0.233938, -0.292462, 0.298538],
        [-0.312636, -0.236036, -0.386136, -0.312736, -0.090736, 0.147964],
        [0.315896, -0.232304, 0.357596, -0.187004, 0.365496, -0.044504],
        [-0.030305, -0.026405, 0.111395, 0.177695, 0.014895, 0.368895],
    ],
    "bias": [-0.405214, 0.073686, -0.111714, 0.102886, 0.121886, -0.001714],
}

# rmsprop.rs `test_rmsprop_optimizer_with_numbers_basic`: alpha 0.99, epsilon 1e-8, L2 penalty
# 0.05, momentum 0.9, not centered; weight all ones, bias all 0.5; inputs X_1 then X_2.
# Tolerance 1e-6.
RMSPROP_BASIC_WEIGHT = [[1.0] * 6] * 6
RMSPROP_BASIC_BIAS = [0.5] * 6
RMSPROP_BASIC = {
    "weight": [[value] * 6 for value in
               (0.743937, 0.783809, 0.742881, 0.740366, 0.748005, 0.743710)],
    "bias": [0.239199] * 6,
}  # fmt: skip
# rmsprop.rs `test_rmsprop_optimizer_with_numbers`: the same config on WEIGHT, BIAS. 1e-6.
RMSPROP = {
    "weight": [
        [-0.576399, -0.118494, 0.148353, 0.064070, -0.169983, -0.188779],
        [-0.135571, -0.231448, -0.578445, 0.041143, -0.018162, -0.504207],
        [-0.275990, -0.222397, -0.553153, -0.008625, -0.534956, 0.055967],
        [-0.557575, -0.480979, -0.631072, -0.557675, -0.335686, -0.096997],
        [0.078313, -0.469618, 0.119993, -0.424341, 0.127890, -0.281912],
        [-0.271996, -0.268097, -0.130324, -0.064037, -0.226805, 0.127126],
    ],
    "bias": [-0.651299, -0.172400, -0.357800, -0.143200, -0.124200, -0.247800],
}

# adan.rs `test_adan_optimizer_with_numbers`: betas (0.98, 0.92, 0.99), epsilon 1e-8,
# weight decay 0.02 (proximal), inputs X_1 then X_2. Tolerance 1e-5.
ADAN = {
    "weight": [
        [-0.34034607, 0.11747075, 0.38426402, 0.29999772, 0.06599136, 0.04719888],
        [0.0644293, -0.031732224, -0.37979296, 0.24165839, 0.18218218, -0.30532277],
        [-0.038910445, 0.01466812, -0.31599957, 0.2283826, -0.29780683, 0.2929568],
        [-0.3178632, -0.24129382, -0.39133376, -0.31796312, -0.09605193, 0.14255258],
        [0.31026322, -0.23771758, 0.3519465, -0.19243571, 0.35984334, -0.049992695],
        [-0.03577819, -0.031879753, 0.10586514, 0.17213862, 0.009403733, 0.36326218],
    ],
    "bias": [-0.4103378, 0.06837065, -0.116955206, 0.097558975, 0.11655137, -0.006999196],
}

# muon.rs `test_adjust_lr_fn_original` / `test_adjust_lr_fn_match_rms_adamw`: (shape, ratio).
MUON_ADJUST_ORIGINAL = [([512, 512], 1.0), ([1024, 512], 2.0**0.5), ([512, 1024], 1.0)]
MUON_ADJUST_MATCH_RMS_ADAMW = [([1024, 512], 0.2 * 1024**0.5), ([512, 512], 0.2 * 512**0.5)]
# muon.rs `test_newton_schulz_orthogonalization`: O O^T has a diagonal within 0.1 of 1.
MUON_NS_MATRIX = [[1.0, 0.5], [0.5, 1.0]]
# muon.rs `test_tall_matrix_transpose` and `test_zero_gradient`.
MUON_TALL = [
    [1.0, 0.5, 0.3, 0.2], [0.5, 1.0, 0.4, 0.1], [0.3, 0.4, 1.0, 0.5], [0.2, 0.1, 0.5, 1.0],
    [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1], [0.2, 0.4, 0.1, 0.3], [0.3, 0.1, 0.4, 0.2],
]  # fmt: skip
MUON_SQUARE = MUON_TALL[:4]

# lbfgs.rs `test_cubic_interpolate`: ((x1, f1, g1, x2, f2, g2), bounds, expected), 1e-8.
CUBIC_INTERPOLATE = [
    ((-1.0, 1.0, -2.0, 1.0, 1.0, 2.0), None, 0.0),
    ((0.0, 0.25, -1.0, 1.0, 0.25, 1.0), (0.6, 1.0), 0.6),
    ((0.0, 0.0, 10.0, 1.0, 5.0, 10.0), (0.0, 1.0), 0.5),
    ((0.0, 1.0, -5.0, 1.0, 0.5, 1.0), None, 0.4606553370833684),
    ((1.231232145, -0.12567458754, 9.1231243007, 8.239105015, -100.9012398021,
      123201321.0293982), None, 5.9031480234724434),
    ((1.231232145, -0.12567458754, 9.1231243007, 8.239105015, -100.9012398021,
      123201321.0293982), (-4.4, 4.4), 4.4000000000000004),
]  # fmt: skip

# lbfgs.rs `test_strong_wolfe_direct_comparison`: f(x) = x^4 - 2x^2 + x from x = 2.1321912957
# along d = 0.91312321, first step 1.213132, c1 1e-4, c2 0.9, tolerance 1e-9, max_ls 10.
STRONG_WOLFE = {
    "x": 2.1321912957,
    "d": 0.91312321,
    "t": 1.213132,
    "f_init": 13.7080059052,
    "gtd_init": 28.5305728912,
    "f_final": 13.708005905151367,
    "g_final": 31.2450428009,
    "t_final": 0.0,
    "evals": 11,
}

# lbfgs.rs `test_lbfgs_strong_wolfe_comparison` / `test_lbfgs_no_strong_wolfe_comparison`:
# Linear(1, 1) with weight 0.5 and bias 0.1 (f64) fit to y = 2x + 1 at x = 1, 2, 3 (MSE, sum),
# one step of lr 0.001 with the default config. Tolerance 1e-5.
LBFGS_X = [[1.0], [2.0], [3.0]]
LBFGS_Y = [[3.0], [5.0], [7.0]]
LBFGS_INITIAL_LOSS = 50.1300048828
LBFGS_STRONG_WOLFE = {"loss": 0.0234732367, "weight": 2.0570652485, "bias": 0.8106800914}
LBFGS_NO_LINE_SEARCH = {"loss": 48.2181930542, "weight": 0.5302446192, "bias": 0.1142520783}
