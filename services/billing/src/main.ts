import { runService } from '@cairn/runtime';
import { billingService } from './service.js';

runService(billingService());
