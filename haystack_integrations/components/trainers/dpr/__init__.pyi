from dpr_components.training.component import DPRTrainer as DPRTrainer
