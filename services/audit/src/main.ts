import { runService } from '@cairn/runtime';
import { auditService } from './service.js';

runService(auditService());
