import { runService } from '@cairn/runtime';
import { webhookService } from './service.js';

runService(webhookService());
